/**
 * Solana transactions a node takes and drops: what the local devnet never does (it executes a
 * transaction as it is sent), so a JSON-RPC proxy in front of it answers sendTransaction without
 * forwarding it. A dropped transaction whose blockhash expires is a failure that paid nothing and
 * frees the payer's hold; one retried while its blockhash is valid is sent again, the same bytes,
 * also from a new process reading the same journal, and succeeds once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator, type FacilitatorOptions } from "../src/facilitator.js";
import { Journal } from "../src/store/journal.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { devnetPayment, svmLamports, svmTokenBalance } from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let proxy: RpcProxy;
let dir: string;

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100, payers: 2 });
  proxy = await startRpcProxy(devnet.rpcUrl);
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-svm-dropped-"));
});

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function facilitatorWith(options: Partial<FacilitatorOptions> = {}) {
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("no fee payer key");
  return new Facilitator({
    rpcUrls: [proxy.url],
    svmFeePayers: [key],
    receiptPollMs: 50,
    ...options,
  });
}

const settle = (f: Facilitator, body: unknown) => handlePost(f, "/settle", body);

const payer = (n: number) => devnet.payers[n] as SvmDevKey;

/**
 * The node takes the next `count` transactions and drops them; the promise settles once the
 * last of them was taken (a test that passes blocks must not pass them before the send).
 */
function dropSends(count: number): Promise<void> {
  let left = count;
  let taken: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    taken = resolve;
  });
  proxy.intercept = (method) => {
    if (method !== "sendTransaction" || left <= 0) return undefined;
    if (--left === 0) taken();
    return { swallow: "dropped" };
  };
  return done;
}

describe("a transaction the node dropped", () => {
  test("its blockhash expires: settlement_failed with its signature, nothing paid, the payer's hold freed", async () => {
    const f = facilitatorWith({ confirmTimeoutMs: 30_000 });
    const from = payer(0);
    const whole = await devnetPayment(devnet, from, PAYER_USDC_BALANCE);
    const [payee, fees] = await Promise.all([
      svmTokenBalance(devnet, devnet.payee.address),
      svmLamports(devnet, devnet.feePayer.address),
    ]);
    const dropped = dropSends(1);
    const pending = settle(f, { payload: whole.payload, requirements: whole.requirements });
    // Once it was sent (and dropped), pass 150 blocks: passed before the send, the blockhash
    // would already be gone at simulation, a different failure (the last test's).
    await Promise.race([dropped, pending]);
    for (let i = 0; i < 160; i++) devnet.cluster.tick();
    const answer = await pending;
    expect(answer).toMatchObject({ status: 400, body: { error: "settlement_failed" } });
    expect(answer.body.message).toMatch(/expired before it landed/);
    expect(answer.body.transactionHash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/);
    expect(await svmTokenBalance(devnet, devnet.payee.address)).toBe(payee);
    expect(await svmLamports(devnet, devnet.feePayer.address)).toBe(fees);
    expect(f.solana.inflight.pending).toBe(0);
    // The hold is gone: a new payment of the whole balance is not refused for it.
    const again = await devnetPayment(devnet, from, PAYER_USDC_BALANCE);
    expect(
      await settle(f, { payload: again.payload, requirements: again.requirements }),
    ).toMatchObject({ status: 200, body: { success: true } });
  });

  test("retried while its blockhash is valid, from a new process on the same journal: the same bytes again, one success", async () => {
    const file = path.join(dir, "journal.jsonl");
    const first = facilitatorWith({ confirmTimeoutMs: 400, journal: new Journal(file) });
    const { payload, requirements } = await devnetPayment(devnet, payer(1), 5_000n);
    const payee = await svmTokenBalance(devnet, devnet.payee.address);
    dropSends(1);
    const pending = await settle(first, { payload, requirements });
    expect(pending).toMatchObject({ status: 500, body: { error: "settlement_pending" } });
    const hash = pending.body.transactionHash;
    expect(await svmTokenBalance(devnet, devnet.payee.address)).toBe(payee);

    // A new process: the journal's unsettled entry counts against the payer at once.
    const second = facilitatorWith({ journal: new Journal(file) });
    expect(second.solana.inflight.pending).toBe(1);
    const sends = proxy.counts.get("sendTransaction") ?? 0;
    const retried = await settle(second, { payload, requirements });
    expect(retried).toMatchObject({ status: 200, body: { success: true, transactionHash: hash } });
    expect(proxy.counts.get("sendTransaction")).toBe(sends + 1);
    expect(await svmTokenBalance(devnet, devnet.payee.address)).toBe(payee + 5_000n);
    expect(await settle(second, { payload, requirements })).toMatchObject({
      status: 409,
      body: { error: "duplicate_settlement" },
    });
  });
});

describe("the reconciler, with no retry (issue 19)", () => {
  test("a dropped transaction whose blockhash is valid is sent again, the same bytes, and recorded landed; the retry gets its one success", async () => {
    const f = facilitatorWith({ confirmTimeoutMs: 400, journal: new Journal() });
    const { payload, requirements } = await devnetPayment(devnet, payer(1), 3_000n);
    const payee = await svmTokenBalance(devnet, devnet.payee.address);
    dropSends(1);
    const pending = await settle(f, { payload, requirements });
    expect(pending).toMatchObject({ status: 500, body: { error: "settlement_pending" } });
    const hash = pending.body.transactionHash;
    const sends = proxy.counts.get("sendTransaction") ?? 0;
    const started = Date.now();
    let pass = await f.reconcile();
    // Sent again now; it lands within a slot or two.
    for (let i = 0; i < 40 && pass[0]?.outcome !== "landed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      pass = await f.reconcile();
    }
    console.log(
      `a dropped Solana transaction closed by the reconciler in ${Date.now() - started} ms`,
    );
    expect(pass).toEqual([
      expect.objectContaining({ outcome: "landed", transaction: hash, network: devnet.network }),
    ]);
    expect(proxy.counts.get("sendTransaction")).toBe(sends + 1);
    expect(await svmTokenBalance(devnet, devnet.payee.address)).toBe(payee + 3_000n);
    expect(await f.reconcile()).toEqual([]);
    expect(await settle(f, { payload, requirements })).toMatchObject({
      status: 200,
      body: { success: true, transactionHash: hash },
    });
    expect(await settle(f, { payload, requirements })).toMatchObject({
      status: 409,
      body: { error: "duplicate_settlement" },
    });
  });

  test("a dropped transaction whose blockhash expired is recorded failed and its hold ended; the retry answers the failure, nothing paid", async () => {
    const f = facilitatorWith({ confirmTimeoutMs: 400, journal: new Journal() });
    const { payload, requirements } = await devnetPayment(devnet, payer(1), 2_000n);
    const payee = await svmTokenBalance(devnet, devnet.payee.address);
    dropSends(1);
    const pending = await settle(f, { payload, requirements });
    expect(pending).toMatchObject({ status: 500, body: { error: "settlement_pending" } });
    expect(f.solana.inflight.pending).toBe(1);
    for (let i = 0; i < 160; i++) devnet.cluster.tick();
    const pass = await f.reconcile();
    expect(pass).toEqual([
      expect.objectContaining({ outcome: "failed", transaction: pending.body.transactionHash }),
    ]);
    expect(f.solana.inflight.pending).toBe(0);
    expect(await f.reconcile()).toEqual([]);
    expect(await svmTokenBalance(devnet, devnet.payee.address)).toBe(payee);
    const retried = await settle(f, { payload, requirements });
    // Its blockhash is gone: the same transaction can never land, and nothing is sent.
    expect(retried).toMatchObject({ status: 400, body: { error: "simulation_failed" } });
    expect(retried.body.message).toMatch(/blockhash/i);
  });
});
