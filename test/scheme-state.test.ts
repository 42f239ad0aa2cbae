/**
 * The store's scheme state (SettlementStore.raiseHighest, markChanged), as each store keeps it:
 * per namespace and id, the highest value raised, refused once the id changed after the state a
 * raise was checked against; kept across a restart. A journal or a PostgreSQL database written by
 * the version before the state was generic (batch-settlement's voucher and changed lines, its
 * facilitator_channels table) loads into the batch-settlement namespace. A real PostgreSQL.
 */
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SettlementStore } from "../src/core/store.js";
import { VOUCHER_NAMESPACE } from "../src/evm/batch-settlement/voucher.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { MIGRATIONS } from "../src/store/schema.js";
import { migrateTo, type Postgres, startPostgres } from "./helpers/postgres.js";

let postgres: Postgres;
let dir: string;
beforeAll(async () => {
  postgres = await startPostgres();
  dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-scheme-state-"));
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const NS = "some-scheme:marks";

interface Kind {
  readonly name: string;
  /** A new store, and how to open it again (a restart: the old one closed). */
  make(): Promise<{ store: SettlementStore; restart: () => Promise<SettlementStore> }>;
}

let files = 0;
const kinds: Kind[] = [
  {
    name: "journal file",
    async make() {
      const file = path.join(dir, `journal-${++files}.jsonl`);
      const store = new Journal(file);
      return {
        store,
        restart: async () => {
          store.close();
          return new Journal(file);
        },
      };
    },
  },
  {
    name: "postgres",
    async make() {
      const url = await postgres.freshDatabase();
      const store = await PostgresStore.open(url, { signers: [] });
      return {
        store,
        restart: async () => {
          await store.close();
          return PostgresStore.open(url, { signers: [] });
        },
      };
    },
  },
];

describe.each(kinds)("$name", (kind) => {
  test("the highest value wins; a raise checked before a change is refused with its time; namespaces and ids apart", async () => {
    const { store, restart } = await kind.make();
    let reopened: SettlementStore | undefined;
    try {
      expect(await store.raiseHighest(NS, "a", 5n)).toBeUndefined();
      expect(await store.raiseHighest(NS, "a", 5n)).toBeUndefined();
      expect(await store.raiseHighest(NS, "a", 4n)).toEqual({ higher: 5n });
      expect(await store.raiseHighest(NS, "a", 7n, 1_000)).toBeUndefined();
      // Another id, another namespace: their own.
      expect(await store.raiseHighest(NS, "b", 1n)).toBeUndefined();
      expect(await store.raiseHighest("other:marks", "a", 1n)).toBeUndefined();

      await store.markChanged(NS, "a", 2_000);
      // An earlier mark does not move the change back.
      await store.markChanged(NS, "a", 1_500);
      expect(await store.raiseHighest(NS, "a", 9n, 1_999)).toEqual({ changedAt: 2_000 });
      // Refused for the change even when a higher value is kept: read again, then decide.
      expect(await store.raiseHighest(NS, "a", 6n, 1_999)).toEqual({ changedAt: 2_000 });
      expect(await store.raiseHighest(NS, "a", 9n, 2_000)).toBeUndefined();
      expect(await store.raiseHighest(NS, "a", 8n, 2_500)).toEqual({ higher: 9n });
      // Without a read time, no change refuses it.
      expect(await store.raiseHighest(NS, "a", 10n)).toBeUndefined();
      // A change of one id leaves the others alone.
      expect(await store.raiseHighest(NS, "b", 2n, 0)).toBeUndefined();
      expect(await store.raiseHighest("other:marks", "a", 2n, 0)).toBeUndefined();

      // Both kept across a restart, a change marked for later (a refund in flight) included.
      await store.markChanged(NS, "b", 9_000_000_000_000);
      reopened = await restart();
      expect(await reopened.raiseHighest(NS, "a", 9n)).toEqual({ higher: 10n });
      expect(await reopened.raiseHighest(NS, "b", 3n, Date.now())).toEqual({
        changedAt: 9_000_000_000_000,
      });
      expect(await reopened.raiseHighest(NS, "a", 11n, 1_999)).toEqual({ changedAt: 2_000 });
      // And changes marked after the restart still count.
      await reopened.markChanged(NS, "a", 3_000);
      expect(await reopened.raiseHighest(NS, "a", 11n, 2_500)).toEqual({ changedAt: 3_000 });
      expect(await reopened.raiseHighest(NS, "a", 11n, 3_000)).toBeUndefined();
    } finally {
      await (reopened ?? store).close();
    }
  });
});

describe("a journal written before the scheme state was generic", () => {
  const id = "evm:84532:0x1111111111111111111111111111111111111111111111111111111111111111";
  const other = "evm:84532:0x2222222222222222222222222222222222222222222222222222222222222222";
  // What that version wrote: a voucher line per channel, a changed line stamped with the time it
  // was written (over the change's own), and, in a compacted file, the change's time itself.
  const written = Date.parse("2026-11-20T10:00:00.000Z");
  const previous = [
    { t: "voucher", channel: id, amount: "5000", at: "2026-11-20T09:00:00.000Z" },
    { t: "changed", channel: id, at: "2026-11-20T10:00:00.000Z" },
    { t: "voucher", channel: other, amount: "7" },
    { t: "changed", channel: other, at: written + 60_000 },
  ];

  test("loads into batch-settlement's namespace: its newest vouchers and changes count", async () => {
    const file = path.join(dir, "previous.jsonl");
    await writeFile(file, previous.map((line) => `${JSON.stringify(line)}\n`).join(""));
    const journal = new Journal(file);
    try {
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, id, 4_000n)).toEqual({ higher: 5_000n });
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, other, 6n)).toEqual({ higher: 7n });
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, id, 6_000n, written - 1)).toEqual({
        changedAt: written,
      });
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, other, 8n, written)).toEqual({
        changedAt: written + 60_000,
      });
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, id, 6_000n, written)).toBeUndefined();
      // Nothing of it in another namespace.
      expect(journal.raiseHighest(NS, id, 1n)).toBeUndefined();
    } finally {
      journal.close();
    }
    // The previous lines stay as they were; what is new is written in the new words.
    const lines = (await readFile(file, "utf8")).trim().split("\n");
    expect(lines.slice(0, previous.length).map((l) => JSON.parse(l))).toEqual(previous);
    expect(lines.slice(previous.length).map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ t: "highest", namespace: VOUCHER_NAMESPACE, id, value: "6000" }),
      expect.objectContaining({ t: "highest", namespace: NS, id, value: "1" }),
    ]);
  });

  test("a compaction rewrites it in the new words, and it loads the same again", async () => {
    const file = path.join(dir, "previous-compacted.jsonl");
    // Mostly history (each line five times over), as a journal is compacted at start-up.
    const history = [...previous, ...previous, ...previous, ...previous, ...previous];
    await writeFile(file, history.map((line) => `${JSON.stringify(line)}\n`).join(""));
    new Journal(file, { compactAfterLines: 1 }).close();
    const lines = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { t: string });
    expect(lines.map((l) => l.t).sort()).toEqual([
      "changed-at",
      "changed-at",
      "highest",
      "highest",
    ]);
    expect(lines).toContainEqual({
      t: "changed-at",
      namespace: VOUCHER_NAMESPACE,
      id: other,
      changedAt: written + 60_000,
    });
    const journal = new Journal(file);
    try {
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, id, 4_000n)).toEqual({ higher: 5_000n });
      expect(journal.raiseHighest(VOUCHER_NAMESPACE, id, 6_000n, written - 1)).toEqual({
        changedAt: written,
      });
    } finally {
      journal.close();
    }
  });
});

describe("a PostgreSQL store of schema 11 (facilitator_channels)", () => {
  test("migration 13 moves its channels into batch-settlement's namespace and drops the table", async () => {
    const url = await postgres.freshDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await migrateTo(client, 11);
      await client.query(
        `INSERT INTO facilitator_channels (channel, highest, changed_at)
         VALUES ('evm:1:0xaa', 5000, 0), ('evm:1:0xbb', 7, 2000)`,
      );

      const store = await PostgresStore.open(url, { signers: [] });
      try {
        expect(await store.raiseHighest(VOUCHER_NAMESPACE, "evm:1:0xaa", 4_000n)).toEqual({
          higher: 5_000n,
        });
        expect(await store.raiseHighest(VOUCHER_NAMESPACE, "evm:1:0xbb", 8n, 1_999)).toEqual({
          changedAt: 2_000,
        });
        expect(await store.raiseHighest(VOUCHER_NAMESPACE, "evm:1:0xbb", 6n, 2_000)).toEqual({
          higher: 7n,
        });
      } finally {
        await store.close();
      }
      const versions = await client.query<{ version: number }>(
        "SELECT version FROM facilitator_migrations ORDER BY version",
      );
      expect(versions.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
      const tables = await client.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'facilitator_%' ORDER BY 1",
      );
      expect(tables.rows.map((r) => r.table_name)).toContain("facilitator_scheme_state");
      expect(tables.rows.map((r) => r.table_name)).not.toContain("facilitator_channels");

      // Opened again: nothing left to run (none is run twice).
      await (await PostgresStore.open(url, { signers: [] })).close();
      const again = await client.query("SELECT count(*)::int AS n FROM facilitator_migrations");
      expect(again.rows[0]).toEqual({ n: MIGRATIONS.length });
    } finally {
      await client.end();
    }
  });
});
