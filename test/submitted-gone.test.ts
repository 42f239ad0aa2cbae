/**
 * A payment answered `submitted` whose transaction can never land: dropped from the pool, and its
 * nonce then used by another transaction of the same key (bench:faults: a replica killed before
 * it sent it again, started again and handing that nonce to a new payment). Before: the reconciler
 * recorded it `dropped`, which forgot the answer, and the payment's retry settled it afresh and
 * answered a second success under a new hash. Now it stays open until the retry settles it afresh,
 * which moves the money once and answers `nonce_already_used` with the new hash. On a real anvil
 * (blocks mined by hand) with the journal file; the other transaction at the nonce is a real one
 * signed with the settlement key.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, mineWhile, payerHolding, tokenBalance } from "./helpers/chain.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-submitted-gone-")),
  ]);
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** Mines until `work` settles (blocks are mined by hand on this devnet). */
const mining = <T>(work: Promise<T>) => mineWhile(devnet.rpcUrl, work);

describe("answered submitted, dropped, and its nonce used by another transaction", () => {
  test("stays open until the retry settles it afresh: the money moves once, and no second success is answered", async () => {
    const journal = new Journal(path.join(dir, "journal.jsonl"));
    const key = privateKeyToAccount(devnet.facilitator.privateKey);
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      useDefaultRpcs: false,
      signer: key,
      receiptPollMs: 50,
      confirmTimeoutMs: 1_500,
      replaceAfterMs: 60_000,
      journal,
    });
    try {
      const payer = await mining(payerHolding(devnet, 1_000n));
      const requirements = requirementsV2(devnet, { amount: "1000" });
      const body = { payload: await clientPayload(payer, requirements), requirements };
      const payee = await tokenBalance(devnet, devnet.payee.address);
      const nonce = await chainOf(devnet).getTransactionCount({
        address: key.address,
        blockTag: "pending",
      });
      const first = await handleSettle(facilitator, body, { waitUntil: "submitted" });
      expect(first.body).toMatchObject({ success: true });
      const hash = first.body.transactionHash as Hex;
      await anvil().dropTransaction({ hash });
      // The key's nonce goes to another transaction, which is mined: the first can never land.
      const wallet = createWalletClient({ account: key, transport: http(devnet.rpcUrl) });
      await wallet.sendTransaction({ chain: null, to: key.address, value: 0n, nonce });
      await anvil().mine({ blocks: 1 });

      // Not written down dropped (that would forget its answer): open, owed a settle afresh.
      const [pass] = await facilitator.reconcile();
      expect(pass).toMatchObject({ outcome: "open", transaction: hash });
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee);

      // The retry moves the money once, under a new hash, and is not answered a second success.
      const retry = await mining(handleSettle(facilitator, body));
      expect(retry.body).toMatchObject({ success: false, error: "nonce_already_used" });
      const afresh = retry.body.transactionHash as Hex;
      expect(afresh).toMatch(/^0x[0-9a-f]{64}$/);
      expect(afresh).not.toBe(hash);
      expect(String(retry.body.message)).toContain(hash);
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
      expect(await facilitator.reconcile()).toEqual([]);
      const again = await handleSettle(facilitator, body);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
    } finally {
      journal.close();
    }
  }, 60_000);
});
