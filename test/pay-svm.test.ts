/**
 * `facilitator pay` on Solana, the built CLI against the project's own Solana devnet: the payments
 * it signs are verified by our Facilitator (through the HTTP handler, both dialects, v1 and v2)
 * and by the official @x402/svm facilitator; a payer key file of either form works and never
 * shows; misuse exits 2 with one clear line; off the local devnet the fee payer and the rest must
 * be named.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmSchemeV1 as ExactSvmFacilitatorV1 } from "@x402/svm/exact/v1/facilitator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  DEVNET_USDC_MINT,
  type SvmDevnet,
  secretKeyBytes,
  startSvmDevnet,
  svmDevKey,
} from "../src/svm/devnet/index.js";
import { encodeMint, MINT_SIZE, TOKEN_PROGRAM } from "../src/svm/devnet/token-layout.js";
import { handlePost } from "./helpers/facilitator.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";
import { referenceSvmFacilitator } from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
/** A second cluster whose test USDC has another mint authority: a cluster that is no devnet. */
let foreign: SvmDevnet;
let facilitator: Facilitator;
let reference: Awaited<ReturnType<typeof referenceSvmFacilitator>>;
let dir: string;

beforeAll(async () => {
  [devnet, foreign, dir] = await Promise.all([
    startSvmDevnet({ slotMs: 100 }),
    startSvmDevnet({ slotMs: 100 }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-pay-svm-")),
  ]);
  const feePayer = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!feePayer) throw new Error("the devnet's fee payer key does not parse");
  facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], svmFeePayers: [feePayer] });
  reference = await referenceSvmFacilitator(devnet);
  foreign.cluster.svm.setAccount({
    address: DEVNET_USDC_MINT,
    lamports: foreign.cluster.svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE)) as never,
    data: encodeMint({
      mintAuthority: svmDevKey("someone else").address,
      supply: 0n,
      decimals: 6,
      freezeAuthority: null,
    }),
    programAddress: TOKEN_PROGRAM,
    executable: false,
    space: BigInt(MINT_SIZE),
  });
}, 60_000);

afterAll(async () => {
  await Promise.all([devnet?.stop(), foreign?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
  removeCliJournals();
});

const pay = (args: string[], rpcUrl = devnet.rpcUrl) =>
  runCli(["pay", ...args], { FACILITATOR_RPC_URL: rpcUrl });

// biome-ignore lint/suspicious/noExplicitAny: request bodies are checked field by field.
type Json = any;

function json(run: { stdout: string; stderr: string }): Json {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`stdout is not JSON: ${run.stdout}; stderr: ${run.stderr}`);
  }
}

const ourVerify = (body: unknown) => handlePost(facilitator, "/verify", body);

/** The official facilitator for x402 v1 (`solana-devnet`), signing as the devnet's fee payer. */
async function referenceV1() {
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(devnet.feePayer));
  return new ExactSvmFacilitatorV1(
    toFacilitatorSvmSigner(signer, { defaultRpcUrl: devnet.rpcUrl }),
  );
}

describe("pay on the Solana devnet", () => {
  it("with the devnet's defaults signs a payment our verify and the official facilitator accept", async () => {
    const run = await pay(["--amount", "0.02"]);
    expect(run.code).toBe(0);
    const body = json(run);
    expect(body.requirements).toEqual({
      scheme: "exact",
      network: devnet.network,
      asset: devnet.mint.address,
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
      extra: { feePayer: devnet.feePayer.address },
      amount: "20000",
    });
    expect(body.payload).toMatchObject({ x402Version: 2, accepted: body.requirements });
    const payer = devnet.payers[0]?.address;
    expect(await ourVerify(body)).toEqual({ status: 200, body: { success: true, payer } });
    expect(await reference.verify(body.payload, body.requirements)).toMatchObject({
      isValid: true,
      payer,
    });
  });

  it("--x402 prints the x402 dialect and --v1 the v1 shapes with the v1 network name", async () => {
    const [x402, v1] = await Promise.all([
      pay(["--x402", "--payer", "2"]),
      pay(["--v1", "--payer", "3", "--network", "solana-devnet"]),
    ]);
    expect(x402.code).toBe(0);
    expect(v1.code).toBe(0);
    const x = json(x402);
    expect(x).toMatchObject({
      x402Version: 2,
      paymentPayload: { x402Version: 2 },
      paymentRequirements: { network: devnet.network, amount: "10000" },
    });
    expect(await ourVerify(x)).toEqual({
      status: 200,
      body: { isValid: true, payer: devnet.payers[1]?.address },
    });
    expect(await reference.verify(x.paymentPayload, x.paymentRequirements)).toMatchObject({
      isValid: true,
    });

    const one = json(v1);
    expect(one.payload).toMatchObject({
      x402Version: 1,
      scheme: "exact",
      network: "solana-devnet",
    });
    expect(one.requirements).toMatchObject({
      network: "solana-devnet",
      maxAmountRequired: "10000",
      extra: { feePayer: devnet.feePayer.address },
    });
    expect(one.requirements.amount).toBeUndefined();
    expect(await ourVerify(one)).toEqual({
      status: 200,
      body: { success: true, payer: devnet.payers[2]?.address },
    });
    expect(
      await (await referenceV1()).verify(one.payload, one.requirements as never),
    ).toMatchObject({ isValid: true, payer: devnet.payers[2]?.address });
  });

  it("--payer-key-file takes a base58 key or a solana-keygen array, and never shows it", async () => {
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer 2");
    const base58File = path.join(dir, "payer.key");
    const arrayFile = path.join(dir, "payer.json");
    const bytes = [...secretKeyBytes(payer)];
    await writeFile(base58File, `# the payer\n${payer.secretKey}\n`, { mode: 0o600 });
    await writeFile(arrayFile, JSON.stringify(bytes), { mode: 0o600 });
    // A 402 answer: an EVM offer first, the Solana one after it (--network picks it).
    const requirementsFile = path.join(dir, "402.json");
    await writeFile(
      requirementsFile,
      JSON.stringify({
        x402Version: 2,
        accepts: [
          {
            scheme: "exact",
            network: "eip155:84532",
            amount: "5",
            asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
            payTo: "0x0000000000000000000000000000000000000001",
          },
          {
            scheme: "exact",
            network: devnet.network,
            amount: "4242",
            asset: devnet.mint.address,
            payTo: devnet.payee.address,
            maxTimeoutSeconds: 60,
            extra: { feePayer: devnet.feePayer.address, memo: "order 17" },
          },
        ],
      }),
    );
    const runs = await Promise.all([
      pay([
        "--payer-key-file",
        base58File,
        "--requirements",
        requirementsFile,
        "--network",
        devnet.network,
      ]),
      pay([
        "--payer-key-file",
        arrayFile,
        "--asset",
        devnet.mint.address,
        "--to",
        devnet.payee.address,
        "--amount",
        "1.5",
        "--fee-payer",
        devnet.feePayer.address,
      ]),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(0);
      const shown = run.stdout + run.stderr;
      expect(shown).not.toContain(payer.secretKey);
      expect(shown).not.toContain(payer.secretKey.slice(0, 16));
      expect(shown).not.toContain(bytes.slice(0, 8).join(","));
      const body = json(run);
      expect(await ourVerify(body)).toEqual({
        status: 200,
        body: { success: true, payer: payer.address },
      });
      expect(await reference.verify(body.payload, body.requirements)).toMatchObject({
        isValid: true,
      });
    }
    const [fromFile, fromFlags] = runs.map(json);
    expect(fromFile.requirements).toMatchObject({
      amount: "4242",
      maxTimeoutSeconds: 60,
      extra: { memo: "order 17" },
    });
    expect(fromFlags.requirements.amount).toBe("1500000");
  });

  it("misuse exits 2 with one clear message and an invalid_request answer", async () => {
    const evmKey = path.join(dir, "evm.key");
    await writeFile(evmKey, `0x${"11".repeat(32)}\n`, { mode: 0o600 });
    const cases: [string[], RegExp][] = [
      [["--method", "permit2"], /--method is for EVM payments/],
      [["--approval"], /--approval is for EVM payments/],
      [["--payer", "9"], /--payer must be 1 to 3 on Solana/],
      [["--to", "0x0000000000000000000000000000000000000001"], /--to is not a Solana address/],
      [["--amount", "0.0000001"], /more decimals than the token's 6/],
      [["--payer-key-file", evmKey], /--payer-key-file holds no Solana secret key/],
      [["--network", "solana-mainnet"], /is not a Solana network/],
      [["--asset", devnet.payee.address], /is no token mint on/],
    ];
    const runs = await Promise.all(cases.map(([args]) => pay(args)));
    runs.forEach((run, i) => {
      const [args, message] = cases[i] as [string[], RegExp];
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(json(run)).toMatchObject({ success: false, error: "invalid_request" });
    });
  });

  it("off the local devnet the fee payer, payer, asset, payee and amount must be named", async () => {
    const [bare, noFeePayer] = await Promise.all([
      pay([], foreign.rpcUrl),
      pay(
        ["--asset", foreign.mint.address, "--to", foreign.payee.address, "--amount", "1"],
        foreign.rpcUrl,
      ),
    ]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--asset is needed: .* is no local devnet/);
    expect(noFeePayer.code).toBe(2);
    expect(noFeePayer.stderr).toMatch(/who pays the fee\? .*--fee-payer/);
  });

  it("an RPC that cannot be reached is chain_unavailable, exit 3", async () => {
    const run = await pay(["--network", "solana-devnet"], "http://127.0.0.1:1");
    expect(run.code).toBe(3);
    expect(json(run)).toMatchObject({ success: false, error: "chain_unavailable" });
  });
});
