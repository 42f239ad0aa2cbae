/**
 * One success per authorization, whatever fails (issue 19): a success is written down as being
 * answered before it is handed over, and as answered after. On a real PostgreSQL store stopped
 * between the transaction landing and its answer, and with an answer begun by a run that died
 * (a replica killed between the two writes), each payment gets exactly one success, from the
 * request that follows the fault; on the file journal too.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createTestClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let postgres: Postgres;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet({ mining: "manual" }), startPostgres()]);
}, 90_000);
afterAll(async () => {
  await devnet?.stop();
  await postgres?.stop();
});

const mine = () =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

async function payment() {
  const payer = await payerHolding(devnet, 1_000n);
  const requirements = requirementsV2(devnet, { amount: "1000" });
  return { payload: await clientPayload(payer, requirements), requirements };
}

/** A payer funded while blocks are mined by hand. */
async function fundedPayment() {
  const funding = payment();
  for (let i = 0; i < 50; i++) {
    await mine();
    const done = await Promise.race([
      funding.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 100)),
    ]);
    if (done) break;
  }
  return funding;
}

function facilitatorWith(journal: Facilitator["journal"]) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiptPollMs: 50,
    journal,
  });
}

/** Settles `body` while blocks are mined by hand, mining until it answers. */
async function settleMining(
  facilitator: Facilitator,
  body: unknown,
  beforeMining?: () => Promise<void>,
) {
  const settling = handleSettle(facilitator, body, { waitUntil: "confirmed" });
  const sent = chainOf(devnet).getTransactionCount({
    address: devnet.facilitator.address,
    blockTag: "pending",
  });
  await sent;
  // The transaction is in the pool (or about to be): let the test break something, then mine.
  await new Promise((r) => setTimeout(r, 300));
  await beforeMining?.();
  for (let i = 0; i < 100; i++) {
    await mine();
    const done = await Promise.race([
      settling.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 100)),
    ]);
    if (done) break;
  }
  return settling;
}

describe("PostgreSQL stopped between the transaction landing and its answer", () => {
  test("that request is answered 503 pending with the hash; the retry gets the one success; the next, nonce_already_used", async () => {
    const url = await postgres.freshDatabase("answers_outage");
    const store = await PostgresStore.open(url, {
      signers: [devnet.facilitator.address],
      leaseMs: 2_000,
    });
    const facilitator = facilitatorWith(store);
    try {
      const body = await fundedPayment();
      const payee = await tokenBalance(devnet, devnet.payee.address);
      // The broadcast is written down; then the store goes away before the receipt comes.
      const first = await settleMining(facilitator, body, () => postgres.halt("fast"));
      expect(first.status).toBe(503);
      expect(first.body).toMatchObject({ success: false, error: "settlement_pending" });
      const hash = first.body.transactionHash as string;
      expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
      // It landed: the payer paid.
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
      await postgres.resume();
      const retry = await handleSettle(facilitator, body);
      expect(retry.body).toMatchObject({ success: true, transactionHash: hash });
      const again = await handleSettle(facilitator, body);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
    } finally {
      await postgres.resume().catch(() => undefined);
      await store.close();
    }
  }, 90_000);
});

describe("an answer begun by a run that died (killed between the two writes)", () => {
  test("PostgreSQL: the next settle answers the success once; while that run lives, retry in a moment", async () => {
    const url = await postgres.freshDatabase("answers_dead_run");
    const store = await PostgresStore.open(url, {
      signers: [devnet.facilitator.address],
      leaseMs: 2_000,
    });
    const facilitator = facilitatorWith(store);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const body = await fundedPayment();
      const paid = await settleMining(facilitator, body);
      expect(paid.body).toMatchObject({ success: true });
      const hash = paid.body.transactionHash as string;
      // What a replica killed after writing "answering" leaves: its run, alive for now.
      await db.query(
        "INSERT INTO facilitator_runs (run, expires_at) VALUES ('replica-1:42:dead', now() + interval '1 hour')",
      );
      await db.query(
        "UPDATE facilitator_settlements SET state = 'answering', owner = 'replica-1:42:dead' WHERE $1 = ANY (hashes)",
        [hash],
      );
      const meanwhile = await handleSettle(facilitator, body);
      expect(meanwhile.status).toBe(409);
      expect(meanwhile.body).toMatchObject({ error: "settlement_in_progress" });
      // The run stops renewing its heartbeat: it died, and never handed the success over.
      await db.query("UPDATE facilitator_runs SET expires_at = now() - interval '1 second'");
      const retry = await handleSettle(facilitator, body);
      expect(retry.body).toMatchObject({ success: true, transactionHash: hash });
      const again = await handleSettle(facilitator, body);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
      // Written down as answered, by this run.
      await facilitator.answers.flush();
      const { rows } = await db.query(
        "SELECT state, owner FROM facilitator_settlements WHERE $1 = ANY (hashes)",
        [hash],
      );
      expect(rows[0]).toEqual({ state: "answered", owner: store.runId });
    } finally {
      await db.end();
      await store.close();
    }
  }, 90_000);

  test("file journal: an answer a previous run began and did not end is answered once by the next run", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-answers-"));
    const file = path.join(dir, "journal.jsonl");
    try {
      const body = await fundedPayment();
      const firstRun = facilitatorWith(new Journal(file));
      const paid = await settleMining(firstRun, body);
      expect(paid.body).toMatchObject({ success: true });
      await firstRun.answers.flush();
      // Turn the journal's last record back into what a run killed before its answer went out
      // leaves: "answering" by that run, with no "answered" after it.
      const lines = (await readFile(file, "utf8")).trimEnd().split("\n");
      const last = JSON.parse(lines.at(-1) as string) as { t: string; state: string };
      expect(last).toMatchObject({ t: "state", state: "answered" });
      await writeFile(file, `${lines.slice(0, -1).join("\n")}\n`);
      expect(JSON.parse(lines.at(-2) as string)).toMatchObject({ state: "answering" });

      const nextRun = facilitatorWith(new Journal(file));
      const retry = await handleSettle(nextRun, body);
      expect(retry.body).toMatchObject({
        success: true,
        transactionHash: paid.body.transactionHash,
      });
      const again = await handleSettle(nextRun, body);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
      // And a run after that: answered, so refused.
      await nextRun.answers.flush();
      const third = await handleSettle(facilitatorWith(new Journal(file)), body);
      expect(third.body).toMatchObject({ success: false, error: "nonce_already_used" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
