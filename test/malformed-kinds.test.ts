/**
 * Malformed input to the newer payload kinds is the caller's mistake, never ours: no 5xx. Each
 * seed is a real payment (the official clients' where they make one): an EIP-3009 payment with
 * bazaar and builder-code extensions, its signature in an ERC-6492 wrapper, every batch-settlement
 * action (deposit, voucher, claim, refund, settle), a Solana payment compressed with a lookup
 * table and one only the smart-wallet path accepts. Every leaf of each is replaced by each hostile
 * value, and each Solana transaction's bytes are cut and flipped, deterministically; /verify and
 * /settle answer every variant below 500, in both dialects, on a real anvil and litesvm.
 */
import type { Instruction } from "@solana/kit";
import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { type Hex, serializeErc6492Signature, zeroAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import type { SvmDevKey } from "../src/svm/devnet/index.js";
import { TOKEN_PROGRAM } from "../src/svm/exact/constants.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
} from "./helpers/batch.js";
import { facilitatorOn, handlePost } from "./helpers/facilitator.js";
import { devnetPayment } from "./helpers/svm-devnet.js";
import { type LookupBench, startLookupBench } from "./helpers/svm-lookup-bench.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

// biome-ignore lint/suspicious/noExplicitAny: requests are edited as plain JSON.
type Json = any;

const MAGIC_6492 = "64926492".repeat(8);
/** What a careless or hostile caller puts in a field. */
const HOSTILE: unknown[] = [
  "",
  "0x",
  "0x123",
  "0xzz",
  `0x${"00".repeat(32)}${MAGIC_6492}`,
  `0x${MAGIC_6492}`,
  "-1",
  "1e400",
  2 ** 53,
  -1,
  null,
  [],
  {},
  "é".repeat(3000),
];

/** The paths of every leaf (and every object) in `value`. */
function paths(value: Json, at: string[] = []): string[][] {
  if (value === null || typeof value !== "object") return [at];
  const inner = Object.entries(value).flatMap(([key, child]) => paths(child, [...at, key]));
  return at.length > 0 ? [at, ...inner] : inner;
}

function setAt(root: Json, at: string[], value: unknown): Json {
  const copy = structuredClone(root);
  let node = copy;
  for (const key of at.slice(0, -1)) node = node[key];
  node[at.at(-1) as string] = value;
  return copy;
}

/** Cut, flipped and padded copies of a base64 transaction. */
function byteVariants(transaction: string): string[] {
  const bytes = Buffer.from(transaction, "base64");
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += Math.max(1, Math.floor(bytes.length / 24))) {
    out.push(bytes.subarray(0, at));
    for (const xor of [0x01, 0x80, 0xff]) {
      const flipped = Buffer.from(bytes);
      flipped[at] = (flipped[at] as number) ^ xor;
      out.push(flipped);
    }
  }
  out.push(Buffer.concat([bytes, Buffer.alloc(64, 0xff)]));
  return [...out.map((b) => b.toString("base64")), "!!!not base64", "AA=="];
}

/** Each mutated copy of the x402 request `seed` (its payload and the payload's extensions). */
function variants(seed: Json): Json[] {
  const out: Json[] = [];
  for (const at of paths(seed.paymentPayload)) {
    for (const value of HOSTILE) out.push(setAt(seed, ["paymentPayload", ...at], value));
  }
  const transaction = seed.paymentPayload.payload?.transaction;
  if (typeof transaction === "string") {
    for (const bytes of byteVariants(transaction)) {
      out.push(setAt(seed, ["paymentPayload", "payload", "transaction"], bytes));
    }
  }
  return out;
}

/** Every variant on /verify and /settle, in turn in each dialect; what came back 5xx. */
async function serverErrors(facilitator: Facilitator, seed: Json) {
  // The seed itself is read as the payment it is (a verdict on it, not on its shape).
  const read = await handlePost(facilitator, "/verify", seed);
  expect(read.body.invalidReason, JSON.stringify(read.body)).not.toBe("invalid_payload");
  const failures: string[] = [];
  let asked = 0;
  for (const [i, request] of variants(seed).entries()) {
    const body =
      i % 2 === 0
        ? request
        : { payload: request.paymentPayload, requirements: request.paymentRequirements };
    for (const route of ["/verify", "/settle"]) {
      const answer = await handlePost(facilitator, route, body);
      asked += 1;
      const reason = answer.body.error ?? answer.body.invalidReason ?? answer.body.errorReason;
      if (answer.status >= 500 || reason === "internal_error" || reason === "chain_unavailable") {
        failures.push(`${route} ${answer.status} ${reason}: ${JSON.stringify(body).slice(0, 300)}`);
      }
    }
  }
  return { asked, failures };
}

const x402 = (payload: Json, requirements: Json) => ({
  x402Version: 2,
  paymentPayload: {
    x402Version: 2,
    resource: { url: "http://localhost/m" },
    ...payload,
    accepted: payload.accepted ?? requirements,
  },
  paymentRequirements: requirements,
});

describe("EVM", () => {
  let devnet: Devnet;
  let facilitator: Facilitator;
  const AUTHORIZER = devAccounts[7] as DevAccount;

  beforeAll(async () => {
    devnet = await startDevnet();
    facilitator = facilitatorOn(devnet, {
      builderCode: { code: "ours_app" },
      receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
    });
  }, 60_000);
  afterAll(async () => {
    await devnet?.stop();
  });

  const payer = () => devnet.payers[0] as DevAccount;
  const offer = () =>
    batchRequirements(devnet, {
      payTo: devnet.payee.address,
      receiverAuthorizer: AUTHORIZER.address,
    });

  test("exact with bazaar and builder-code extensions, and in an ERC-6492 wrapper: 0 5xx", async () => {
    const requirements = requirementsV2(devnet);
    const paid = (await clientPayload(payer(), requirements)) as Json;
    paid.extensions = {
      bazaar: declareDiscoveryExtension({
        input: { units: "metric" },
        inputSchema: { properties: { units: { type: "string", pattern: "^[a-z]+$" } } },
        output: { example: { celsius: 24 } },
      }).bazaar,
      "builder-code": { info: { a: "shop_app", s: ["buyer_agent"] } },
    };
    // Another payment (its own nonce): the first one's variants may settle it.
    const wrapped = { ...((await clientPayload(payer(), requirements)) as Json) };
    wrapped.extensions = paid.extensions;
    wrapped.payload.signature = serializeErc6492Signature({
      address: zeroAddress,
      data: "0x",
      signature: wrapped.payload.signature as Hex,
    });
    for (const seed of [x402(paid, requirements), x402(wrapped, requirements)]) {
      const { asked, failures } = await serverErrors(facilitator, seed);
      expect(asked).toBeGreaterThan(500);
      expect(failures).toEqual([]);
    }
  }, 300_000);

  test("batch-settlement deposit, voucher, claim, refund and settle: 0 5xx", async () => {
    const accepted = offer();
    const deposit = await officialPayload(devnet, payer(), accepted, 5);
    const channel = officialChannel(devnet, payer(), accepted);
    const voucher = { ...(await channel.voucher(1_000n)), channelId: channel.id };
    const manager = managerRequirements(accepted);
    const seeds = [
      x402({ accepted, payload: deposit }, accepted),
      x402({ payload: { type: "voucher", channelConfig: channel.config, voucher } }, accepted),
      x402({ payload: { type: "claim", claims: [await channel.claimRow(1_000n)] } }, manager),
      x402(
        {
          payload: {
            type: "refund",
            channelConfig: channel.config,
            voucher,
            amount: "1000",
            refundNonce: "0",
            claims: [],
          },
        },
        { ...manager, extra: { receiverAuthorizer: AUTHORIZER.address } },
      ),
      x402(
        { payload: { type: "settle", receiver: devnet.payee.address, token: accepted.asset } },
        manager,
      ),
    ];
    for (const seed of seeds) {
      const { asked, failures } = await serverErrors(facilitator, seed);
      expect(asked).toBeGreaterThan(50);
      expect(failures).toEqual([]);
    }
  }, 600_000);
});

describe("Solana", () => {
  let bench: LookupBench;
  let smart: Facilitator;

  beforeAll(async () => {
    bench = await startLookupBench();
    const key = svmFeePayerOf(bench.devnet.feePayer.secretKey);
    if (!key) throw new Error("no fee payer key");
    smart = new Facilitator({
      rpcUrls: [bench.devnet.rpcUrl],
      svmFeePayers: [key],
      receiptPollMs: 50,
      svmSmartWallets: {
        allowedPrograms: [TOKEN_PROGRAM],
        maxComputeUnits: 400_000,
        maxPriorityFeeMicroLamports: 50_000n,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await bench?.stop();
  });

  test("a lookup-table transaction and a smart-wallet one: 0 5xx", async () => {
    const table = await bench.payment();
    // The memo before the transfer: only the smart-wallet path accepts it.
    const wallet = await devnetPayment(bench.devnet, bench.devnet.payers[1] as SvmDevKey, 1_000n, {
      transform: ([limit, price, transfer, memo]) =>
        [limit, price, memo, transfer] as Instruction[],
    });
    for (const [facilitator, seed] of [
      [bench.ours, x402(table.payload, table.requirements)],
      [smart, x402(wallet.payload, wallet.requirements)],
    ] as const) {
      const { asked, failures } = await serverErrors(facilitator, seed);
      expect(asked).toBeGreaterThan(100);
      expect(failures).toEqual([]);
    }
  }, 600_000);
});
