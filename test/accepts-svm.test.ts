/**
 * POST /accepts with Solana offers, beside EVM ones, against the project's own devnets (anvil and
 * the Solana devnet): a Solana `exact` offer on a served cluster is completed with our fee payer,
 * one naming another fee payer is left out, and without a fee payer key no Solana offer is kept;
 * EVM offers are completed as before. A completed offer is one `facilitator pay` can pay and our
 * verify accepts.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import { type SvmDevnet, startSvmDevnet, svmDevKey } from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";

let evm: Devnet;
let svm: SvmDevnet;
let withFeePayer: Facilitator;
let withoutFeePayer: Facilitator;
let dir: string;

beforeAll(async () => {
  [evm, svm, dir] = await Promise.all([
    startDevnet(),
    startSvmDevnet({ slotMs: 100 }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-accepts-svm-")),
  ]);
  const feePayer = svmFeePayerOf(svm.feePayer.secretKey);
  if (!feePayer) throw new Error("the devnet's fee payer key does not parse");
  const rpcUrls = [evm.rpcUrl, svm.rpcUrl];
  withFeePayer = new Facilitator({ rpcUrls, svmFeePayers: [feePayer] });
  withoutFeePayer = new Facilitator({ rpcUrls });
}, 60_000);

afterAll(async () => {
  await Promise.all([evm?.stop(), svm?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
  removeCliJournals();
});

async function accepts(facilitator: Facilitator, offers: unknown[]) {
  const answer = await handlePost(facilitator, "/accepts", {
    x402Version: 2,
    resource: { url: "http://localhost/x" },
    accepts: offers,
  });
  expect(answer.status).toBe(200);
  return answer.body as { accepts: Record<string, unknown>[] };
}

const solanaOffer = () => ({
  scheme: "exact",
  network: svm.network,
  amount: "5000",
  asset: svm.mint.address,
  payTo: svm.payee.address,
});
const evmOffer = () => ({
  scheme: "exact",
  network: evm.network,
  amount: "5000",
  asset: evm.token.address,
  payTo: evm.payee.address,
});

describe("POST /accepts with Solana offers", () => {
  it("completes a Solana offer with our fee payer, and EVM offers as before", async () => {
    const offered = solanaOffer();
    const answer = await accepts(withFeePayer, [
      offered,
      evmOffer(),
      { ...offered, network: "solana-devnet", maxTimeoutSeconds: 60 },
      { ...offered, extra: { feePayer: svm.feePayer.address, memo: "order 9" } },
    ]);
    expect(answer.accepts).toEqual([
      { ...offered, maxTimeoutSeconds: 300, extra: { feePayer: svm.feePayer.address } },
      { ...evmOffer(), maxTimeoutSeconds: 300, extra: { name: "USDC", version: "2" } },
      {
        ...offered,
        network: svm.network,
        maxTimeoutSeconds: 60,
        extra: { feePayer: svm.feePayer.address },
      },
      {
        ...offered,
        maxTimeoutSeconds: 300,
        extra: { feePayer: svm.feePayer.address, memo: "order 9" },
      },
    ]);
  });

  it("leaves out offers naming another fee payer, on clusters not served, or ill-formed", async () => {
    const offered = solanaOffer();
    const answer = await accepts(withFeePayer, [
      { ...offered, extra: { feePayer: svmDevKey("someone else").address } },
      { ...offered, extra: { feePayer: 42 } },
      { ...offered, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" },
      { ...offered, network: "solana" },
      { ...offered, network: "solana-mainnet" },
      { ...offered, asset: evm.token.address },
      { ...offered, payTo: "not base58!" },
      { ...offered, payTo: "1111" },
      { ...offered, amount: "1.5" },
      { ...offered, amount: 5000 },
      { ...offered, scheme: "upto" },
    ]);
    expect(answer.accepts).toEqual([]);
  });

  it("without a fee payer key no Solana offer is kept; EVM offers still are", async () => {
    const answer = await accepts(withoutFeePayer, [solanaOffer(), evmOffer()]);
    expect(answer.accepts).toEqual([
      { ...evmOffer(), maxTimeoutSeconds: 300, extra: { name: "USDC", version: "2" } },
    ]);
  });

  it("a completed Solana offer is one facilitator pay pays and our verify accepts", async () => {
    const answer = await accepts(withFeePayer, [evmOffer(), solanaOffer()]);
    const file = path.join(dir, "402.json");
    await writeFile(file, JSON.stringify(answer));
    const run = await runCli(["pay", "--requirements", file, "--network", "solana-devnet"], {
      FACILITATOR_RPC_URL: svm.rpcUrl,
    });
    expect(run.code, run.stderr).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(body.requirements).toMatchObject({ network: svm.network, amount: "5000" });
    const verified = await handlePost(withFeePayer, "/verify", body);
    expect(verified.body).toEqual({ success: true, payer: svm.payers[0]?.address });
  });
});
