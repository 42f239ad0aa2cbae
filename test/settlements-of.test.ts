/**
 * How many settlements a payer (or an asset) had answered with us, as each store counts them for
 * the wasted-gas budget (a payer's allowance past it): after a restart, up to the count asked for,
 * a payer's over the last 30 days and an asset's ever. On PostgreSQL the payer's count is read
 * through its index, and an older schema gains it by migration.
 */
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { type Address, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SettlementStore } from "../src/core/store.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { PAYER_SETTLEMENTS } from "../src/store/postgres-waste.js";
import { migrateTo, type Postgres, startPostgres } from "./helpers/postgres.js";

const SIGNER = `0x${"5".repeat(40)}` as Address;
const PAYER = `0x${"ab".repeat(20)}` as Address;
const OTHER = `0x${"cd".repeat(20)}` as Address;
const TOKEN = `0x${"01".repeat(20)}` as Address;
const OLD_TOKEN = `0x${"02".repeat(20)}` as Address;
const DAY = 24 * 60 * 60_000;

let postgres: Postgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

/** Writes down settlement `key` as sent and, unless `answered` is false, answered success. */
async function settle(
  store: SettlementStore,
  key: string,
  from: Address,
  token: Address,
  { network = "eip155:1", answered = true } = {},
) {
  expect(await store.claim(key)).toBe(true);
  const expect_ = { token, from, to: OTHER, value: "1" };
  await store.recordSend(
    { key, network, signer: SIGNER, txNonce: 0, expect: expect_ },
    "0x01",
    "0x02",
  );
  if (answered) await store.markAnswered(key);
  await store.release(key);
}

interface Kind {
  readonly name: string;
  /** A new store, and how to open it again (a restart) once `key` is made 31 days old. */
  make(): Promise<{
    store: SettlementStore;
    restartAging: (key: string) => Promise<SettlementStore>;
  }>;
}

const kinds: Kind[] = [
  {
    name: "journal file",
    async make() {
      const file = path.join(await mkdtemp(path.join(os.tmpdir(), "facilitator-count-")), "j");
      const store = new Journal(file);
      return {
        store,
        async restartAging(key) {
          store.close();
          const old = new Date(Date.now() - 31 * DAY).toISOString();
          const lines = (await readFile(file, "utf8")).split("\n").map((line) => {
            if (!line) return line;
            const record = JSON.parse(line) as { key?: string; at?: string };
            return record.key === key ? JSON.stringify({ ...record, at: old }) : line;
          });
          await writeFile(file, lines.join("\n"));
          return new Journal(file);
        },
      };
    },
  },
  {
    name: "postgres",
    async make() {
      const url = await postgres.freshDatabase();
      const store = await PostgresStore.open(url, { signers: [SIGNER] });
      return {
        store,
        async restartAging(key) {
          await store.close();
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          await client.query(
            "UPDATE facilitator_settlements SET updated_at = now() - interval '31 days' WHERE key = $1",
            [key as Hex],
          );
          await client.end();
          return PostgresStore.open(url, { signers: [SIGNER] });
        },
      };
    },
  },
];

describe.each(kinds)("$name", (kind) => {
  test("a payer's answered settlements of the last 30 days, up to the count asked for; an asset's ever; each chain apart", async () => {
    const { store: first, restartAging } = await kind.make();
    await settle(first, "old", PAYER, OLD_TOKEN);
    for (const key of ["a", "b", "c"]) await settle(first, key, PAYER, TOKEN);
    // Answered, handed over in vain (landed again), answered again: still one settlement.
    await first.unmarkAnswered("c");
    await first.markAnswered("c");
    await settle(first, "sent", PAYER, TOKEN, { answered: false });
    await settle(first, "elsewhere", PAYER, TOKEN, { network: "eip155:8453" });
    const store = await restartAging("old");
    try {
      const count = (
        who: { payer: string } | { asset: string },
        atMost = 10,
        network = "eip155:1",
      ) => store.settlementsOf?.(network, who, atMost);
      expect(await count({ payer: PAYER })).toBe(3);
      expect(await count({ payer: getAddress(PAYER) })).toBe(3);
      expect(await count({ payer: PAYER }, 2)).toBe(2);
      expect(await count({ payer: PAYER }, 10, "eip155:8453")).toBe(1);
      expect(await count({ payer: OTHER })).toBe(0);
      expect(await count({ asset: OLD_TOKEN }, 1)).toBe(1);
      expect(await count({ asset: TOKEN }, 1)).toBe(1);
      expect(await count({ asset: OTHER }, 1)).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe("postgres", () => {
  test("a store of schema 7 gains the payer index by migration; the count reads it among 40,000 settlements", async () => {
    const url = await postgres.freshDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await migrateTo(client, 7);
      await (await PostgresStore.open(url, { signers: [SIGNER] })).close();
      const { rows } = await client.query<{ indexname: string }>(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'facilitator_settlements' ORDER BY 1",
      );
      expect(rows.map((r) => r.indexname)).toContain("facilitator_settlements_answered_payer_at");
      expect(rows.map((r) => r.indexname)).not.toContain("facilitator_settlements_answered_payer");

      // 4,000 payers with 10 answered settlements each, one every 4 days: 8 in the last 30.
      await client.query(`
        INSERT INTO facilitator_settlements (key, network, signer, tx_nonce, expect, hashes, raws, state, updated_at)
        SELECT 'k' || i, 'eip155:1', '${SIGNER}', i,
               jsonb_build_object('from', '0x' || lpad(to_hex(i % 4000), 40, '0'), 'token', '${TOKEN}'),
               '{}', '{}', 'answered', now() - (i / 4000) * 4 * interval '1 day'
          FROM generate_series(1, 40000) AS i`);
      await client.query("ANALYZE facilitator_settlements");
      await client.query(`PREPARE count_payer AS ${PAYER_SETTLEMENTS}`);
      const payer = `0x${(7).toString(16).padStart(40, "0")}`;
      const plan = await client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN EXECUTE count_payer('eip155:1', '${payer}', 3, ${30 * DAY})`,
      );
      expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(
        /Index (Only )?Scan using facilitator_settlements_answered_payer_at/,
      );
      const store = await PostgresStore.open(url, { signers: [SIGNER] });
      expect(await store.settlementsOf("eip155:1", { payer }, 20)).toBe(8);
      await store.close();
    } finally {
      await client.end();
    }
  }, 60_000);
});
