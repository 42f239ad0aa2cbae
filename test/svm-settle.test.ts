/**
 * Solana settle through our Facilitator against the local Solana devnet (litesvm behind our
 * JSON-RPC server): payments made by the official @x402/svm client, settled exactly once, with
 * the tokens, the fee payer's SOL and the chain's statuses read back; replays, concurrent
 * duplicates, payers spending more than they hold, the fee cap, pending settlements, a restart;
 * and the official @x402/svm facilitator on the same cluster where its verdict can be compared.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator, type FacilitatorOptions } from "../src/facilitator.js";
import { bytesToBase58 } from "../src/protocol/base58.js";
import { Journal } from "../src/store/journal.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import {
  devnetPayment,
  referenceSvmFacilitator,
  svmClientPayload,
  svmLamports,
  svmRequirementsV2,
  svmRpc,
  svmTokenBalance,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let dir: string;
const feePayerKey = () => {
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("the devnet's fee payer key does not parse");
  return key;
};

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100, payers: 8 });
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-svm-settle-"));
});

afterAll(async () => {
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function facilitatorWith(options: Partial<FacilitatorOptions> = {}) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    svmFeePayers: [feePayerKey()],
    receiptPollMs: 50,
    ...options,
  });
}

// biome-ignore lint/suspicious/noExplicitAny: the official client's payload type is a union.
type Payload = any;
type Requirements = ReturnType<typeof svmRequirementsV2>;

const post = handlePost;

const x402Settle = (f: Facilitator, payload: Payload, requirements: Requirements) =>
  post(f, "/settle", {
    x402Version: 2,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });
const settle = (f: Facilitator, payload: Payload, requirements: Requirements, waitUntil?: string) =>
  post(f, "/settle", { payload, requirements, ...(waitUntil ? { waitUntil } : {}) });

const tokenBalance = (owner: string) => svmTokenBalance(devnet, owner);

const lamports = (owner: string) => svmLamports(devnet, owner);

async function status(signature: string) {
  const { result } = await svmRpc(devnet, "getSignatureStatuses", [[signature]]);
  return (result as { value: ({ err: unknown; confirmationStatus: string } | null)[] }).value[0];
}

function payer(n: number): SvmDevKey {
  const key = devnet.payers[n];
  if (!key) throw new Error(`no payer ${n}`);
  return key;
}

/** A payment with any part changed, signed by `from`, on a fresh blockhash. */
const built = (from: SvmDevKey, amount: bigint, options: { microLamports?: bigint } = {}) =>
  devnetPayment(devnet, from, amount, options);

describe("settle", () => {
  test("a v2 payment settles once: the tokens move, our fee payer pays the fee, the chain confirms it", async () => {
    const f = facilitatorWith();
    const requirements = svmRequirementsV2(devnet, { amount: "12345" });
    const payload = await svmClientPayload(devnet, payer(0), requirements);
    const [payee, paying, fees] = await Promise.all([
      tokenBalance(devnet.payee.address),
      tokenBalance(payer(0).address),
      lamports(devnet.feePayer.address),
    ]);
    const { status: code, body } = await x402Settle(f, payload, requirements);
    expect(code).toBe(200);
    expect(body).toMatchObject({
      success: true,
      payer: payer(0).address,
      network: devnet.network,
      transaction: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/),
    });
    const landed = await status(body.transaction as string);
    expect(landed).toMatchObject({ err: null });
    expect(["confirmed", "finalized"]).toContain(landed?.confirmationStatus);
    expect(await tokenBalance(devnet.payee.address)).toBe(payee + 12_345n);
    expect(await tokenBalance(payer(0).address)).toBe(paying - 12_345n);
    // Two signatures at 5,000 lamports and 20,000 units at 1 micro-lamport: 10,001.
    expect(await lamports(devnet.feePayer.address)).toBe(fees - 10_001n);
  });

  test("the same transaction as an x402 v1 payment on solana-devnet settles", async () => {
    const f = facilitatorWith();
    const requirements = svmRequirementsV2(devnet, { amount: "777" });
    const v2 = await svmClientPayload(devnet, payer(0), requirements);
    const v1Requirements = {
      scheme: "exact",
      network: "solana-devnet",
      maxAmountRequired: "777",
      resource: "http://localhost/paid",
      description: "",
      mimeType: "application/json",
      payTo: requirements.payTo,
      maxTimeoutSeconds: 300,
      asset: requirements.asset,
      extra: requirements.extra,
    };
    const before = await tokenBalance(devnet.payee.address);
    const { status: code, body } = await post(f, "/settle", {
      x402Version: 1,
      paymentPayload: {
        x402Version: 1,
        scheme: "exact",
        network: "solana-devnet",
        payload: v2.payload,
      },
      paymentRequirements: v1Requirements,
    });
    expect(code).toBe(200);
    expect(body).toMatchObject({ success: true, network: "solana-devnet" });
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 777n);
  });

  test("a replay is never paid or answered success again: in this process, after a restart, and with a journal that forgot it", async () => {
    const file = path.join(dir, "replay.jsonl");
    const f = facilitatorWith({ journal: new Journal(file) });
    const requirements = svmRequirementsV2(devnet, { amount: "500" });
    const payload = await svmClientPayload(devnet, payer(1), requirements);
    const first = await settle(f, payload, requirements);
    expect(first).toMatchObject({ status: 200, body: { success: true } });
    const hash = first.body.transactionHash as string;
    const before = await tokenBalance(devnet.payee.address);

    const again = await settle(f, payload, requirements);
    expect(again).toMatchObject({ status: 409, body: { error: "duplicate_settlement" } });
    expect(again.body.message).toContain(hash);
    const x402 = await x402Settle(f, payload, requirements);
    expect(x402.body).toMatchObject({ success: false, errorReason: "duplicate_settlement" });
    // Verify says so too (the cluster's simulation answers AlreadyProcessed), with the 400 of a
    // payment refused at verify; the x402 dialect keeps the reference's reason.
    expect(await post(f, "/verify", { payload, requirements })).toMatchObject({
      status: 400,
      body: { error: "duplicate_settlement" },
    });
    const verified = await post(f, "/verify", {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(verified.body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_svm_transaction_simulation_failed",
    });

    const restarted = facilitatorWith({ journal: new Journal(file) });
    expect(await settle(restarted, payload, requirements)).toMatchObject({
      status: 409,
      body: { error: "duplicate_settlement" },
    });
    // A journal that never saw it (another facilitator settled it, or the file was lost): the
    // chain still knows the signature.
    const forgetful = facilitatorWith();
    expect(await settle(forgetful, payload, requirements)).toMatchObject({
      status: 409,
      body: { error: "duplicate_settlement" },
    });
    expect(await tokenBalance(devnet.payee.address)).toBe(before);
  });

  test("payment-identifier: the same id and request get the first success again, another request under it 409", async () => {
    const f = facilitatorWith();
    const requirements = svmRequirementsV2(devnet, { amount: "600" });
    const signed = await svmClientPayload(devnet, payer(1), requirements);
    const id = "svm-order-0000000000000001";
    const payload = { ...signed, extensions: { "payment-identifier": { info: { id } } } };
    const before = await tokenBalance(devnet.payee.address);
    const first = await settle(f, payload, requirements);
    expect(first).toMatchObject({ status: 200, body: { success: true } });
    const again = await settle(f, payload, requirements);
    expect(again).toMatchObject({
      status: 200,
      body: { success: true, transactionHash: first.body.transactionHash },
    });
    const other = await svmClientPayload(devnet, payer(1), requirements);
    expect(
      await settle(f, { ...other, extensions: payload.extensions }, requirements),
    ).toMatchObject({ status: 409, body: { error: "idempotency_conflict" } });
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 600n);
  });

  test("50 concurrent settles of one transaction: one success, one transfer", async () => {
    const f = facilitatorWith();
    const requirements = svmRequirementsV2(devnet, { amount: "321" });
    const payload = await svmClientPayload(devnet, payer(2), requirements);
    const before = await tokenBalance(devnet.payee.address);
    const fees = await lamports(devnet.feePayer.address);
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => settle(f, payload, requirements)),
    );
    const codes = answers.map((a) => (a.body.success ? "success" : a.body.error));
    expect(codes.filter((c) => c === "success")).toHaveLength(1);
    expect(codes.filter((c) => c !== "success").every((c) => c === "settlement_in_progress")).toBe(
      true,
    );
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 321n);
    expect(await lamports(devnet.feePayer.address)).toBe(fees - 10_001n);
  });

  test("a payer signing many payments of its whole balance at once: one is paid, the rest refused before anything fails on chain", async () => {
    const f = facilitatorWith();
    const from = payer(3);
    const balance = await tokenBalance(from.address);
    expect(balance).toBe(PAYER_USDC_BALANCE);
    const payments = await Promise.all(Array.from({ length: 8 }, () => built(from, balance)));
    const fees = await lamports(devnet.feePayer.address);
    const answers = await Promise.all(payments.map((p) => settle(f, p.payload, p.requirements)));
    const codes = answers.map((a) => (a.body.success ? "success" : a.body.error));
    expect(codes.filter((c) => c === "success")).toHaveLength(1);
    // Refused by the in-flight check, or (once the first has landed) by the simulation.
    expect(
      codes
        .filter((c) => c !== "success")
        .every((c) => c === "insufficient_funds" || c === "simulation_failed"),
    ).toBe(true);
    expect(codes).toContain("insufficient_funds");
    expect(await tokenBalance(from.address)).toBe(0n);
    // One fee paid: nothing that failed on chain cost us.
    expect(await lamports(devnet.feePayer.address)).toBe(fees - 10_001n);
  });

  test("a transaction that would cost the fee payer more than the cap is refused at verify and settle, nothing sent", async () => {
    const f = facilitatorWith({ svmMaxFeeLamports: 50_000n });
    // 20,000 units at 5,000,000 micro-lamports: 100,000 lamports of priority fee (under the
    // reference's price cap).
    const { payload, requirements } = await built(payer(4), 100n, { microLamports: 5_000_000n });
    const verified = await post(f, "/verify", { payload, requirements });
    expect(verified).toMatchObject({ status: 400, body: { error: "compute_budget_too_high" } });
    expect(verified.body.message).toMatch(/110000 lamports.*cap is 50000/);
    const before = await lamports(devnet.feePayer.address);
    const settled = await settle(f, payload, requirements);
    expect(settled).toMatchObject({ status: 400, body: { error: "compute_budget_too_high" } });
    expect(await lamports(devnet.feePayer.address)).toBe(before);
    // Under the default cap (150,000 lamports) it settles.
    expect(await settle(facilitatorWith(), payload, requirements)).toMatchObject({
      status: 200,
    });
  });

  test("simulated sends nothing; submitted answers before the transaction is confirmed", async () => {
    const f = facilitatorWith();
    const { payload, requirements } = await built(payer(4), 1_000n);
    const before = await tokenBalance(devnet.payee.address);
    const dry = await settle(f, payload, requirements, "simulated");
    expect(dry).toMatchObject({ status: 200, body: { success: true } });
    expect(await status(dry.body.transactionHash as string)).toBeNull();
    expect(await tokenBalance(devnet.payee.address)).toBe(before);

    const sent = await settle(f, payload, requirements, "submitted");
    expect(sent).toMatchObject({ status: 200, body: { success: true } });
    // The same id: the fee payer's signature of one message is one signature.
    expect(sent.body.transactionHash).toBe(dry.body.transactionHash);
    for (let i = 0; i < 40 && (await status(sent.body.transactionHash as string)) === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await status(sent.body.transactionHash as string)).toMatchObject({ err: null });
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 1_000n);
    expect(await settle(f, payload, requirements)).toMatchObject({
      status: 409,
      body: { error: "duplicate_settlement" },
    });
  });

  test("not confirmed in time: settlement_pending with the signature; the retry gets that success once, never a second", async () => {
    devnet.cluster.stopSlots();
    try {
      const f = facilitatorWith({ confirmTimeoutMs: 300 });
      const { payload, requirements } = await built(payer(5), 2_000n);
      const before = await tokenBalance(devnet.payee.address);
      const pending = await settle(f, payload, requirements);
      expect(pending).toMatchObject({ status: 500, body: { error: "settlement_pending" } });
      const hash = pending.body.transactionHash as string;
      expect(hash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/);
      devnet.cluster.tick();
      devnet.cluster.tick();
      const retried = await settle(f, payload, requirements);
      expect(retried).toMatchObject({
        status: 200,
        body: { success: true, transactionHash: hash },
      });
      expect(await settle(f, payload, requirements)).toMatchObject({
        status: 409,
        body: { error: "duplicate_settlement" },
      });
      expect(await tokenBalance(devnet.payee.address)).toBe(before + 2_000n);
    } finally {
      devnet.cluster.startSlots(100);
    }
  });

  test("a fee payer of ours without SOL: 503 fee_payer_unfunded at verify and settle, the payer not blamed, nothing sent", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
    const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
    const broke = svmFeePayerOf(bytesToBase58(Buffer.concat([seed, pub])));
    if (!broke) throw new Error("no key");
    const f = facilitatorWith({ svmFeePayers: [broke] });
    const p = await devnetPayment(devnet, payer(6), 10n, { feePayer: broke.address as never });
    const requirements = { ...p.requirements, extra: { feePayer: broke.address } };
    for (const route of ["/verify", "/settle"]) {
      const answer = await post(f, route, { payload: p.payload, requirements });
      expect(answer).toMatchObject({ status: 503, body: { error: "fee_payer_unfunded" } });
      expect(answer.body.message).toContain(broke.address);
    }
    const x402 = await post(f, "/verify", {
      x402Version: 2,
      paymentPayload: p.payload,
      paymentRequirements: requirements,
    });
    expect(x402.body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_svm_transaction_simulation_failed",
    });
  });

  test("an expired blockhash is refused before anything is sent", async () => {
    const f = facilitatorWith();
    const { payload, requirements } = await built(payer(6), 10n);
    for (let i = 0; i < 160; i++) devnet.cluster.tick();
    const before = await lamports(devnet.feePayer.address);
    const answer = await settle(f, payload, requirements);
    expect(answer).toMatchObject({ status: 400, body: { error: "simulation_failed" } });
    expect(answer.body.message).toContain("BlockhashNotFound");
    expect(await lamports(devnet.feePayer.address)).toBe(before);
  });
});

describe("beside the official @x402/svm facilitator", () => {
  test("a transaction the official facilitator settled is not answered success here", async () => {
    const reference = await referenceSvmFacilitator(devnet);
    const requirements = svmRequirementsV2(devnet, { amount: "42" });
    const payload = await svmClientPayload(devnet, payer(7), requirements);
    const official = await reference.settle(payload, requirements as never);
    expect(official.success).toBe(true);
    const ours = await x402Settle(facilitatorWith(), payload, requirements);
    expect(ours.body).toMatchObject({ success: false, errorReason: "duplicate_settlement" });
    expect(ours.body.errorMessage ?? ours.body.message ?? "").toBeDefined();
  });

  test("a transaction we settled: the official facilitator refuses it too, by its simulation", async () => {
    const reference = await referenceSvmFacilitator(devnet);
    const requirements = svmRequirementsV2(devnet, { amount: "43" });
    const payload = await svmClientPayload(devnet, payer(7), requirements);
    expect(await x402Settle(facilitatorWith(), payload, requirements)).toMatchObject({
      status: 200,
      body: { success: true },
    });
    const official = await reference.settle(payload, requirements as never);
    expect(official).toMatchObject({
      success: false,
      errorReason: "invalid_exact_svm_transaction_simulation_failed",
    });
  });
});
