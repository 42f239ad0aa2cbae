/**
 * Every settlement followed to its end without a retry (issue 19): a transaction the node dropped
 * is sent again and recorded landed; a replica killed (SIGKILL) mid-settle leaves a settlement the
 * other replica's reconciler follows by its hash (without the key that sent it) and records, the
 * dead replica's hold on the payer ending with it; the CLI's `facilitator reconcile` does one pass
 * for a cron job. Each then answers the payment's retry with its one success. Real anvil (manual
 * mining), real PostgreSQL, real processes.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChainFamily } from "../src/core/family.js";
import { reconcileOnce } from "../src/core/reconciler.js";
import type { JournalEntry, SettlementStore } from "../src/core/store.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { type Cluster, postTo, startCluster } from "./helpers/replicas.js";
import { runCli } from "./helpers/run-cli.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const anvilOf = (devnet: Devnet) =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** A payment of 1000 from a fresh payer, funded while blocks are mined by hand. */
async function fundedPayment(devnet: Devnet) {
  const funding = payerHolding(devnet, 1_000n);
  for (let i = 0; i < 100; i++) {
    await anvilOf(devnet).mine({ blocks: 1 });
    if (await Promise.race([funding.then(() => true), sleep(50).then(() => false)])) break;
  }
  const requirements = requirementsV2(devnet, { amount: "1000" });
  return { payload: await clientPayload(await funding, requirements), requirements };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for the key's transaction count in the pool to reach `count`. */
async function pooled(devnet: Devnet, address: `0x${string}`, count: number) {
  for (let i = 0; i < 200; i++) {
    const pending = await chainOf(devnet).getTransactionCount({ address, blockTag: "pending" });
    if (pending >= count) return;
    await sleep(25);
  }
  throw new Error("the transaction never reached the pool");
}

describe("a transaction the node dropped", () => {
  let devnet: Devnet;
  let dir: string;
  beforeAll(async () => {
    [devnet, dir] = await Promise.all([
      startDevnet({ mining: "manual" }),
      mkdtemp(path.join(os.tmpdir(), "facilitator-reconciler-")),
    ]);
  }, 60_000);
  afterAll(async () => {
    await devnet?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("is sent again by the reconciler and recorded landed with no retry; the retry then gets its one success", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
      receiptPollMs: 50,
      confirmTimeoutMs: 1_500,
      replaceAfterMs: 60_000,
      journal: new Journal(path.join(dir, "journal.jsonl")),
    });
    const us = devnet.facilitator.address;
    const body = await fundedPayment(devnet);
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const sent = await chainOf(devnet).getTransactionCount({ address: us, blockTag: "pending" });
    const asked = Date.now();
    const settling = handleSettle(facilitator, body, { waitUntil: "confirmed" });
    await pooled(devnet, us, sent + 1);
    const hash = (await facilitator.journal.openSettlements(0))[0]?.hashes[0] as Hex;
    // The node forgets it while anvil holds the synchronous send (which it answers only after its
    // own ~10 s): nothing will ever mine it unless it is sent again.
    await anvilOf(devnet).dropTransaction({ hash });
    const first = await settling;
    const answeredMs = Date.now() - asked;
    expect(first.body).toMatchObject({ success: false, error: "settlement_pending" });
    // Answered within the 1.5 s confirm timeout and a margin, not after the node's own wait.
    expect(answeredMs).toBeLessThan(1_500 + 2_000);
    expect(await chainOf(devnet).getTransactionCount({ address: us, blockTag: "pending" })).toBe(
      sent,
    );

    const started = Date.now();
    const [pass] = await Promise.all([
      facilitator.reconcile(),
      (async () => {
        await pooled(devnet, us, sent + 1);
        await anvilOf(devnet).mine({ blocks: 1 });
      })(),
    ]);
    const closedMs = Date.now() - started;
    expect(pass).toEqual([
      expect.objectContaining({ outcome: "landed", transaction: hash, network: devnet.network }),
    ]);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
    expect((await facilitator.journal.get(pass[0]?.key as string))?.state).toBe("landed");
    // Nothing left open; the payment's retry answers the success, once.
    expect(await facilitator.reconcile()).toEqual([]);
    expect((await handleSettle(facilitator, body)).body).toMatchObject({
      success: true,
      transactionHash: hash,
    });
    expect((await handleSettle(facilitator, body)).body).toMatchObject({
      error: "nonce_already_used",
    });
    console.log(
      `a dropped transaction answered pending in ${answeredMs} ms, closed by one reconciler pass in ${closedMs} ms`,
    );
  }, 60_000);
});

describe("a replica killed mid-settle", () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({
      count: 2,
      leaseSeconds: 2,
      mining: "manual",
      env: { FACILITATOR_RECONCILE_SECONDS: "0.5", FACILITATOR_RECONCILE_IDLE_SECONDS: "1" },
    });
  }, 90_000);
  afterAll(() => cluster?.stop());

  test("the other replica's reconciler follows its transaction by hash and records it landed, with no retry; the retry gets the one success", async () => {
    const { devnet, store, replicas } = cluster;
    const [survivor, doomed] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const body = await fundedPayment(devnet);
    const key = doomed.signer.address;
    const sent = await chainOf(devnet).getTransactionCount({ address: key, blockTag: "pending" });
    void postTo(doomed.url, "/settle", body);
    await pooled(devnet, key, sent + 1);
    doomed.child.kill("SIGKILL");
    await doomed.exited;
    const db = new pg.Client({ connectionString: store });
    db.on("error", () => undefined);
    await db.connect();
    try {
      const stateOf = async () =>
        (
          await db.query<{ key: string; state: string; hashes: string[] }>(
            "SELECT key, state, hashes FROM facilitator_settlements WHERE lower(signer) = lower($1) ORDER BY created_at DESC LIMIT 1",
            [key],
          )
        ).rows[0];
      expect((await stateOf())?.state).toBe("broadcast");
      const minedAt = Date.now();
      await anvilOf(devnet).mine({ blocks: 1 });
      let row = await stateOf();
      for (let i = 0; i < 100 && row?.state !== "landed"; i++) {
        await sleep(100);
        row = await stateOf();
      }
      const closedMs = Date.now() - minedAt;
      expect(row?.state).toBe("landed");
      const hash = row?.hashes.at(-1);
      // The dead replica's hold on the payer ended with it (landed in its block): the survivor's
      // ledger never held it, so its reconciler tells the store.
      const holdOf = async () =>
        (
          await db.query<{ landed_block: string | null }>(
            "SELECT landed_block::text FROM facilitator_reservations WHERE key = $1",
            [row?.key],
          )
        ).rows;
      let hold = await holdOf();
      for (let i = 0; i < 50 && hold.some((h) => h.landed_block === null); i++) {
        await sleep(100);
        hold = await holdOf();
      }
      expect(hold.length).toBeGreaterThan(0);
      expect(hold.every((h) => h.landed_block !== null)).toBe(true);
      // Any replica says what it knows: landed, sent by the dead replica's key and run.
      const status = (await (
        await fetch(`${survivor.url}/settlements?transaction=${hash}`)
      ).json()) as Record<string, unknown>;
      expect(status).toMatchObject({
        found: true,
        state: "landed",
        signer: doomed.signer.address,
        chain: { onChain: "mined", transaction: hash },
      });
      expect(String(status.by)).toMatch(/:\d+:[0-9a-f]{8}$/);
      // Only now the payment is sent again: the survivor answers the success it recorded.
      const retry = await postTo(survivor.url, "/settle", body);
      expect(retry).toMatchObject({ status: 200, body: { success: true, transactionHash: hash } });
      const again = await postTo(survivor.url, "/settle", body);
      expect(again.body).toMatchObject({ error: "nonce_already_used" });
      console.log(`an orphaned settlement recorded landed ${closedMs} ms after its block`);
    } finally {
      await db.end();
    }
  }, 90_000);
});

describe("facilitator reconcile, once, for a cron job", () => {
  let devnet: Devnet;
  let dir: string;
  beforeAll(async () => {
    [devnet, dir] = await Promise.all([
      startDevnet({ mining: "manual" }),
      mkdtemp(path.join(os.tmpdir(), "facilitator-reconcile-cli-")),
    ]);
  }, 60_000);
  afterAll(async () => {
    await devnet?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("a settle that timed out is open (exit 1) until its block; then landed (exit 0) and the settle answers it", async () => {
    const file = path.join(dir, "payment.json");
    await writeFile(file, JSON.stringify(await fundedPayment(devnet)));
    const env = {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
      FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
      FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
    };
    const timedOut = await runCli(["settle", file, "--confirm-timeout", "1", "-q"], env);
    expect(timedOut.code).toBe(3);
    expect(JSON.parse(timedOut.stdout)).toMatchObject({ error: "settlement_pending" });

    // doctor says what is left open, and how long it has waited.
    const doctor = await runCli(["doctor", "--json"], env);
    const journalFinding = (
      JSON.parse(doctor.stdout) as { findings: { area: string; message: string; fix?: string }[] }
    ).findings.find((f) => f.area === "journal" && /not followed to the end/.test(f.message));
    expect(journalFinding?.message).toMatch(
      /1 settlement not followed to the end yet, the oldest for \d+ s/,
    );
    expect(journalFinding?.fix).toContain("facilitator reconcile");

    const open = await runCli(["reconcile"], env);
    expect(open.code, open.stdout + open.stderr).toBe(1);
    expect(JSON.parse(open.stdout)).toMatchObject({
      ok: false,
      followed: 1,
      counts: { open: 1 },
      settlements: [{ outcome: "open", network: devnet.network }],
    });

    await anvilOf(devnet).mine({ blocks: 1 });
    const landed = await runCli(["reconcile"], env);
    expect(landed.code, landed.stdout + landed.stderr).toBe(0);
    const report = JSON.parse(landed.stdout) as { settlements: { transaction: string }[] };
    expect(report).toMatchObject({ ok: true, counts: { landed: 1 } });
    const settled = await runCli(["settle", file, "-q"], env);
    expect(settled.code).toBe(0);
    expect(JSON.parse(settled.stdout)).toMatchObject({
      success: true,
      transactionHash: report.settlements[0]?.transaction,
    });
    const nothing = await runCli(["reconcile"], env);
    expect(JSON.parse(nothing.stdout)).toMatchObject({ ok: true, followed: 0 });

    // Asked about, by its hash and by its payment: answered, mined, sent with the devnet's key.
    const hash = report.settlements[0]?.transaction as string;
    for (const args of [["--transaction", hash], [file]]) {
      const status = await runCli(["status", ...args], env);
      expect(status.code, status.stdout + status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({
        found: true,
        state: "answered",
        transactions: [hash],
        signer: devnet.facilitator.address,
        chain: { onChain: "mined", transaction: hash, network: devnet.network, confirmations: 1 },
      });
    }
    const unknown = await runCli(["status", "--transaction", `0x${"0".repeat(64)}`], env);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ found: false });
  }, 60_000);
});

describe("a settlement answered between the pass's list and its claim", () => {
  test("is left as answered, not written landed (a second success to the next settle)", async () => {
    const listed: JournalEntry = {
      key: "eip3009:31337:token:payer:nonce",
      network: "eip155:31337",
      signer: "0x0000000000000000000000000000000000000001",
      txNonce: 7,
      expect: {
        token: "0x0000000000000000000000000000000000000002",
        from: "0x0000000000000000000000000000000000000003",
        to: "0x0000000000000000000000000000000000000004",
        value: "1000",
      },
      hashes: [`0x${"ab".repeat(32)}`],
      raws: [],
      state: "broadcast",
    };
    let stored: JournalEntry = { ...listed };
    const followed: JournalEntry[] = [];
    const store = {
      openSettlements: async () => [{ ...listed }],
      // The settle that held it answers it and gives its claim back just before this claim.
      claim: async () => {
        stored = { ...stored, state: "answered" };
        return true;
      },
      release: async () => undefined,
      get: async () => ({ ...stored }),
      recordState: async (_key: string, state: JournalEntry["state"]) => {
        stored = { ...stored, state };
      },
    } as unknown as SettlementStore;
    const family = {
      owns: () => true,
      follow: async (entry: JournalEntry) => {
        followed.push(entry);
        return { outcome: "landed", network: "eip155:31337", detail: "in block 1" };
      },
    } as unknown as ChainFamily;
    const [found] = await reconcileOnce([family], store);
    expect(found).toMatchObject({ outcome: "busy", detail: "settled meanwhile" });
    expect(followed).toEqual([]);
    expect(stored.state).toBe("answered");
  });
});
