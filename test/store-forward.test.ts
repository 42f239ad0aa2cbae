/**
 * Issue 41: a settlement names its chain by its CAIP-2 network. Stores written before that (an
 * EVM chain id, 0 for Solana) are read forward: a journal written by main's Journal at 2db2f0a
 * (test/fixtures/journal-2db2f0a.jsonl, made by journal-2db2f0a.gen.txt run against that
 * commit's src/), and a PostgreSQL database of migrations 1 to 17 (that commit's schema: shipped
 * migrations are never edited) holding rows as that commit's recordSend wrote them. Each is opened
 * by this code, settles on, and what status, the reconciler and the in-flight ledger read of the
 * old entries is right. A real PostgreSQL.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { svmSpendOf } from "../src/svm/chain/ledger-reads.js";
import { migrateTo, type Postgres, startPostgres } from "./helpers/postgres.js";

const FIXTURE = path.join(import.meta.dirname, "fixtures", "journal-2db2f0a.jsonl");
const EVM = "eip155:31337";
const SOLANA = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const PAYER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const TOKEN = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const SIGNER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const SIG =
  "5h5wDvnCHiHhuS58BvLxqjQUnKyUkwrvJiAG4WoJRUZy3aG2UPbLqUEHvDyWPEuSFXzcLDevSNyfXRZvxCUdZCLk";
const SVM_KEY = `svm:${SOLANA}:${SIG}`;
const hashOf = (i: number) => `0x${i.toString(16).padStart(64, "0")}`;
const evmKey = (i: number) => `eip3009:31337:${TOKEN}:${PAYER}:${hashOf(i)}`;
const transfer = { token: TOKEN, from: PAYER, to: `0x${"a0".repeat(20)}`, value: "10000" };

describe("a journal written before networks", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "store-forward-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("is read with each entry's network, settles on, and is written forward", async () => {
    const file = path.join(dir, "journal.jsonl");
    copyFileSync(FIXTURE, file);
    expect(readFileSync(file, "utf8")).toContain('"chainId":31337');
    const journal = new Journal(file);
    // Status and GET /settlements: by key and by transaction, EVM and Solana.
    expect(journal.get(evmKey(1))).toMatchObject({ network: EVM, state: "answered" });
    expect(await journal.findByTransaction(SIG)).toMatchObject({ key: SVM_KEY, network: SOLANA });
    // The reconciler and start-up: what is still followed, on its network.
    expect([...journal.unsettled()].map((e) => [e.key, e.network])).toEqual([
      [evmKey(2), EVM],
      [evmKey(3), EVM],
    ]);
    // A Solana entry counts against its payer after a restart, on its own network.
    const svm = journal.get(SVM_KEY);
    expect(svm && svmSpendOf(svm)?.spend).toMatchObject({ network: SOLANA, source: "Source111" });
    // Who settled (the wasted-gas budget's question), by network.
    expect(await journal.settlementsOf(EVM, { payer: PAYER }, 10)).toBe(1);
    expect(await journal.settlementsOf(SOLANA, { payer: "Source111" }, 10)).toBe(1);

    // Settling on: a new settlement, answered; then the file compacted and read again.
    await journal.claim(evmKey(4));
    await journal.recordSend(
      { key: evmKey(4), network: EVM, signer: SIGNER, txNonce: 4, expect: transfer },
      hashOf(4),
      "0x04",
    );
    await journal.markAnswered(evmKey(4));
    await journal.recordState(evmKey(2), "answered");
    await journal.compact();
    journal.close();
    const lines = readFileSync(file, "utf8").trim().split("\n");
    expect(lines.some((line) => line.includes("chainId"))).toBe(false);
    const again = new Journal(file);
    for (const [key, network] of [
      [evmKey(1), EVM],
      [evmKey(2), EVM],
      [evmKey(3), EVM],
      [evmKey(4), EVM],
      [SVM_KEY, SOLANA],
    ] as const) {
      expect(again.get(key)?.network, key).toBe(network);
    }
    expect(await again.settlementsOf(EVM, { payer: PAYER }, 10)).toBe(3);
    again.close();
  });
});

describe("a PostgreSQL store written before networks", () => {
  let postgres: Postgres;
  beforeAll(async () => {
    postgres = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await postgres?.stop();
  });

  test("is migrated: each row's network, both tables, who settled, and Solana holds", async () => {
    const url = await postgres.freshDatabase("before_networks");
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      await migrateTo(db, 17);
      // The columns 2db2f0a's recordSend inserts (postgres-settlements.ts), then its states.
      const insert = `INSERT INTO facilitator_settlements (key, chain_id, signer, tx_nonce, expect, action, hashes, raws, state, owner)
        VALUES ($1, $2, $3, $4, $5, NULL, ARRAY[$6], ARRAY[$7], $8, 'old:1')`;
      const evm = (i: number, state: string) =>
        db.query(insert, [evmKey(i), 31337, SIGNER, i, transfer, hashOf(i), "0x0i", state]);
      await evm(1, "answered");
      await evm(2, "broadcast");
      await evm(5, "answered");
      await db.query(insert, [
        SVM_KEY,
        0,
        "FeePayer1111111111111111111111111111111111",
        0,
        { token: "Mint111", from: "Source111", to: "Dest111", value: "5" },
        SIG,
        "AQID",
        "answered",
      ]);
      // Retention moved one to the archive (2db2f0a's postgres-retention.ts: same columns).
      await db.query(
        `WITH moved AS (DELETE FROM facilitator_settlements WHERE key = $1 RETURNING *)
         INSERT INTO facilitator_settlements_archive SELECT * FROM moved`,
        [evmKey(5)],
      );
      // A Solana hold of a replica holding no signer lease, before its settlement's row.
      await db.query(
        `INSERT INTO facilitator_reservations (key, slot, amount, owner)
         VALUES ('svm:later', $1, 5, 'other:1')`,
        [`${SOLANA}:Mint111:Source222`],
      );
    } finally {
      await db.end();
    }

    const store = await PostgresStore.open(url, { signers: [SIGNER] });
    try {
      expect(await store.get(evmKey(1))).toMatchObject({ network: EVM, state: "answered" });
      expect(await store.get(SVM_KEY)).toMatchObject({
        network: SOLANA,
        signer: expect.any(String),
      });
      expect(await store.findByTransaction(hashOf(5))).toMatchObject({ network: EVM });
      expect((await store.openSettlements(0)).map((e) => [e.key, e.network])).toEqual([
        [evmKey(2), EVM],
      ]);
      expect(await store.settlementsOf(EVM, { payer: PAYER }, 10)).toBe(1);
      expect(await store.settlementsOf(SOLANA, { payer: "Source111" }, 10)).toBe(1);
      // Settling on.
      expect(await store.claim(evmKey(3))).toBe(true);
      await store.recordSend(
        { key: evmKey(3), network: EVM, signer: SIGNER, txNonce: 3, expect: transfer },
        hashOf(3),
        "0x03",
      );
      await store.markAnswered(evmKey(3));
      await store.release(evmKey(3));
      expect(await store.settlementsOf(EVM, { payer: PAYER }, 10)).toBe(2);
    } finally {
      await store.close();
    }
    const db2 = new pg.Client({ connectionString: url });
    await db2.connect();
    try {
      const held = await db2.query(
        "SELECT key FROM facilitator_others_hold($1, 'svm:mine', 'me:1')",
        [[`${SOLANA}:Mint111:Source222`]],
      );
      expect(held.rows).toEqual([{ key: "svm:later" }]);
    } finally {
      await db2.end();
    }
  }, 60_000);
});
