/**
 * A payment answered `submitted` is a payment followed (issue 29, items 1 and 2). Before: a
 * success answered `submitted` was written down as answered, the reconciler only followed
 * `broadcast` entries, so a transaction the node dropped was never sent again: the seller had
 * its success, the money never moved, the payer's hold never ended; and a retry of the same body
 * sent the bytes again and answered a second success. Now the store keeps it `submitted` (its
 * bytes too) until it lands (then `answered`) or can no longer land; the reconciler sends it
 * again; a retry never gets a second success. On a real anvil (blocks mined by hand), with the
 * journal file and with a real PostgreSQL.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SettlementStore } from "../src/core/store.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { chainOf, mineWhile, payerHolding, tokenBalance } from "./helpers/chain.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let postgres: Postgres;
let dir: string;

beforeAll(async () => {
  [devnet, postgres, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    startPostgres(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-submitted-")),
  ]);
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const us = () => devnet.facilitator.address;
const pending = () => chainOf(devnet).getTransactionCount({ address: us(), blockTag: "pending" });

/** Mines until `work` settles (blocks are mined by hand on this devnet). */
const mining = <T>(work: Promise<T>) => mineWhile(devnet.rpcUrl, work);

/** A payer holding `holds`, and its payment of `amount`, valid for `seconds`. */
async function payment(holds: bigint, amount: bigint, seconds = 300) {
  const payer = await mining(payerHolding(devnet, holds));
  const requirements = requirementsV2(devnet, {
    amount: amount.toString(),
    maxTimeoutSeconds: seconds,
  });
  return { payer, body: { payload: await clientPayload(payer, requirements), requirements } };
}

async function stores(): Promise<[string, () => Promise<SettlementStore>][]> {
  const url = await postgres.freshDatabase("submitted");
  return [
    ["the journal file", async () => new Journal(path.join(dir, `${Date.now()}.jsonl`))],
    ["PostgreSQL", () => PostgresStore.open(url, { signers: [us()] })],
  ];
}

function facilitatorOn(journal: SettlementStore) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiptPollMs: 50,
    confirmTimeoutMs: 1_500,
    replaceAfterMs: 60_000,
    journal,
  });
}

describe("answered submitted, then dropped from the pool", () => {
  test("the reconciler sends it again and it lands; the hold ends; a retry never gets a second success", async () => {
    for (const [name, open] of await stores()) {
      const journal = await open();
      const facilitator = facilitatorOn(journal);
      try {
        const { payer, body } = await payment(3_000n, 1_000n);
        const payee = await tokenBalance(devnet, devnet.payee.address);
        const before = await pending();
        const answered = await handleSettle(facilitator, body, { waitUntil: "submitted" });
        expect(answered.body, name).toMatchObject({ success: true });
        const hash = answered.body.transactionHash as Hex;
        const [entry] = await journal.openSettlements(0);
        expect(entry?.state, name).toBe("submitted");
        // The node forgets it; nobody retries.
        await anvil().dropTransaction({ hash });
        expect(await pending()).toBe(before);

        // While it is open the payer's hold stands: its whole balance is not free to pay.
        const wholeRequirements = requirementsV2(devnet, { amount: "3000" });
        const whole = await handleSettle(
          facilitator,
          {
            payload: await clientPayload(payer, wholeRequirements),
            requirements: wholeRequirements,
          },
          { waitUntil: "submitted" },
        );
        expect(whole.body, name).toMatchObject({ success: false, error: "insufficient_funds" });
        const [pass] = await Promise.all([
          facilitator.reconcile(),
          (async () => {
            for (let i = 0; i < 200 && (await pending()) === before; i++) await sleep(25);
            await anvil().mine({ blocks: 1 });
          })(),
        ]);
        expect(pass, name).toEqual([
          expect.objectContaining({ outcome: "landed", transaction: hash }),
        ]);
        expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
        expect((await journal.get(entry?.key as string))?.state, name).toBe("answered");
        expect(await facilitator.reconcile(), name).toEqual([]);
        // Landed: the hold ended, the payer's other 2,000 are free to pay.
        const rest = await clientPayload(payer, requirementsV2(devnet, { amount: "2000" }));
        const verdict = await handleVerify(facilitator, {
          payload: rest,
          requirements: requirementsV2(devnet, { amount: "2000" }),
        });
        expect(verdict.body, name).toMatchObject({ success: true });
        // The same body again: the one success was answered already.
        const again = await handleSettle(facilitator, body);
        expect(again.body, name).toMatchObject({ success: false, error: "nonce_already_used" });
      } finally {
        await journal.close();
      }
    }
  }, 120_000);

  test("dropped after its authorization expired: not sent again, recorded failed, the hold ends, the retry is refused", async () => {
    const journal = new Journal(path.join(dir, "expired.jsonl"));
    const facilitator = facilitatorOn(journal);
    const { payer, body } = await payment(1_000n, 1_000n, 30);
    const answered = await handleSettle(facilitator, body, { waitUntil: "submitted" });
    expect(answered.body).toMatchObject({ success: true });
    const hash = answered.body.transactionHash as Hex;
    await anvil().dropTransaction({ hash });
    // Its validBefore passes before anything mines it.
    await anvil().increaseTime({ seconds: 3_600 });
    await anvil().mine({ blocks: 1 });
    const sent = await pending();
    const [pass] = await facilitator.reconcile();
    // Nothing was sent again: it would only revert.
    expect(await pending()).toBe(sent);
    expect(pass).toMatchObject({ outcome: "failed", transaction: hash });
    expect(await facilitator.reconcile()).toEqual([]);
    expect(await tokenBalance(devnet, payer.address)).toBe(1_000n);
    const again = await handleSettle(facilitator, body);
    expect(again.body.success).toBe(false);
    // The hold is gone: a new payment of the whole balance verifies.
    // (Valid for a day: the chain's clock is an hour ahead of ours now.)
    const fresh = requirementsV2(devnet, { amount: "1000", maxTimeoutSeconds: 86_400 });
    const verdict = await handleVerify(facilitator, {
      payload: await clientPayload(payer, fresh),
      requirements: fresh,
    });
    expect(verdict.body).toMatchObject({ success: true });
    journal.close();
  }, 60_000);
});

describe("what a settle waits for", () => {
  test("behind our own unmined transaction: it names that one, its key and nonce, never 'unrecorded'", async () => {
    const journal = new Journal(path.join(dir, "behind.jsonl"));
    const facilitator = facilitatorOn(journal);
    // Valid for a day: an earlier test moved the chain's clock an hour ahead of ours.
    const [first, second] = [
      await payment(1_000n, 1_000n, 86_400),
      await payment(1_000n, 1_000n, 86_400),
    ];
    const nonce = await pending();
    const answered = await handleSettle(facilitator, first.body, { waitUntil: "submitted" });
    expect(answered.body, JSON.stringify(answered.body)).toMatchObject({ success: true });
    const hash = answered.body.transactionHash as Hex;
    // Nothing is mined: the second waits behind the first, past its confirmation wait.
    const waiting = await handleSettle(facilitator, second.body);
    expect(waiting.body).toMatchObject({ success: false, error: "settlement_pending" });
    const message = String(waiting.body.message);
    expect(message).toContain(hash);
    expect(message).toContain(`nonce ${nonce}`);
    expect(message).toContain("sent by this key");
    expect(message).not.toMatch(/did not record/);
    await mining(handleSettle(facilitator, second.body));
    journal.close();
  }, 60_000);
});
