/**
 * Solana payments worth nothing (issue 37, item 2): a transfer of 0 signed by the official
 * @x402/svm client from a key that never held anything is refused at verify and settle before any
 * RPC call, and our fee payer pays no fee; an operator's minimum for the mint refuses below it
 * and settles at it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator, type FacilitatorOptions } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import { type SvmDevKey, type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { svmDevKey } from "../src/svm/devnet/keys.js";
import { handlePost } from "./helpers/facilitator.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { svmClientPayload, svmLamports, svmRequirementsV2 } from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
  proxy = await startRpcProxy(devnet.rpcUrl);
});
afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

/** A facilitator reaching the cluster through the counting proxy, its cluster already learned. */
async function throughProxy(options: Partial<FacilitatorOptions> = {}) {
  const feePayer = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!feePayer) throw new Error("the devnet's fee payer key does not parse");
  const facilitator = new Facilitator({
    rpcUrls: [proxy.url],
    svmFeePayers: [feePayer],
    receiptPollMs: 50,
    ...options,
  });
  await facilitator.supported();
  proxy.counts.clear();
  return facilitator;
}

const chainCalls = () => [...proxy.counts.values()].reduce((a, b) => a + b, 0);
const feePayerLamports = () => svmLamports(devnet, devnet.feePayer.address);

async function pay(from: SvmDevKey, amount: string, payTo?: string) {
  const requirements = svmRequirementsV2(devnet, { amount, ...(payTo ? { payTo } : {}) });
  const paymentPayload = await svmClientPayload(devnet, from, requirements);
  return { x402Version: 2, paymentPayload, paymentRequirements: requirements };
}

describe("Solana payments of 0", () => {
  test("10 from fresh keys to fresh payees, official client: refused, no RPC call, no fee paid", async () => {
    const run = Date.now();
    const bodies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        pay(svmDevKey(`zero-payer-${run}-${i}`), "0", svmDevKey(`zero-payee-${run}-${i}`).address),
      ),
    );
    const facilitator = await throughProxy();
    const lamports = await feePayerLamports();
    const answers = await Promise.all(
      bodies.flatMap((body) => [
        handlePost(facilitator, "/verify", body),
        handlePost(facilitator, "/settle", body),
      ]),
    );
    for (const { body } of answers) {
      expect(body.isValid ?? body.success).toBe(false);
      expect(body.invalidReason ?? body.errorReason).toBe("amount_too_small");
    }
    expect(chainCalls()).toBe(0);
    expect(await feePayerLamports()).toBe(lamports);
  });

  test("--min-amount for the mint: refused below before any RPC call, settled at it", async () => {
    const facilitator = await throughProxy({
      minAmounts: [{ network: devnet.network, asset: devnet.mint.address, units: 1_000n }],
    });
    const payer = devnet.payers[0] as SvmDevKey;
    const below = await pay(payer, "999");
    proxy.counts.clear();
    const refused = await handlePost(facilitator, "/settle", below);
    expect(refused.body).toMatchObject({ success: false, errorReason: "amount_too_small" });
    expect(String(refused.body.errorMessage)).toContain("at least 1000 units");
    expect(chainCalls()).toBe(0);
    const settled = await handlePost(facilitator, "/settle", await pay(payer, "1000"));
    expect(settled.body).toMatchObject({ success: true });
  });
});
