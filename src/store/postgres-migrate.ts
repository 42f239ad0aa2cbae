/**
 * Runs the migrations a database lacks, one replica at a time (an advisory lock). A store migrated
 * by a newer facilitator is refused: an older one must not write tables it misreads.
 */
import type { Pool } from "pg";
import { FacilitatorError } from "../protocol/errors.js";
import { inTransaction, withClient } from "./postgres-query.js";
import { MIGRATIONS } from "./schema.js";

const MIGRATION_LOCK = 0x7a1c_402;

export function migrate(pool: Pool): Promise<void> {
  return withClient(pool, async (client) => {
    try {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
      await client.query(
        "CREATE TABLE IF NOT EXISTS facilitator_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      const { rows } = await client.query<{ version: number }>(
        "SELECT version FROM facilitator_migrations",
      );
      const applied = new Set(rows.map((row) => row.version));
      const found = Math.max(0, ...applied);
      if (found > MIGRATIONS.length) {
        throw FacilitatorError.of(
          "store_unavailable",
          `the store's schema is version ${found}, newer than this facilitator's (${MIGRATIONS.length}); run the same facilitator version as the other replicas`,
        );
      }
      // Every one it lacks, in order (a gap left by a branch's numbering is filled too).
      for (let version = 1; version <= MIGRATIONS.length; version++) {
        if (applied.has(version)) continue;
        await inTransaction(client, async () => {
          await client.query(MIGRATIONS[version - 1] as string);
          await client.query("INSERT INTO facilitator_migrations (version) VALUES ($1)", [version]);
        });
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => undefined);
    }
  });
}
