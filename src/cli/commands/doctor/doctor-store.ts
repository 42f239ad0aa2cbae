/** doctor's read-only look at a PostgreSQL store: takes no lease, migrates nothing. */

import type { JournalEntry } from "../../../core/store.js";
import { settlementAccount } from "../../../evm/chain/secp256k1.js";
import { firstLine } from "../../../protocol/words.js";
import { redactStoreUrl } from "../../../store/postgres.js";
import { MIGRATIONS, UNSETTLED_STATES } from "../../../store/schema.js";
import type { CliConfig } from "../../settings/config.js";
import { keysOrNone } from "../../settings/config-keys.js";
import { type Finding, finding, openSettlementsFinding } from "./doctor-checks.js";

/** The settlements still followed (a batch's members aside), oldest first. */
export const OPEN_FOR_DOCTOR = `SELECT key, state, hashes, updated_at FROM facilitator_settlements
  WHERE ${UNSETTLED_STATES} AND key NOT LIKE '%#%' ORDER BY updated_at`;

export async function checkStore(config: CliConfig, url: string): Promise<Finding[]> {
  const where = redactStoreUrl(url);
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (error) {
    const reason = firstLine(error);
    const fix = "start PostgreSQL, or check the URL, its user and PGPASSWORD";
    return [finding("store", "unreachable", `${where} cannot be reached (${reason})`, fix)];
  }
  try {
    const version = await client
      .query<{ v: number | null }>("SELECT max(version) AS v FROM facilitator_migrations")
      .then((r) => r.rows[0]?.v ?? 0)
      .catch(() => 0);
    if (version === 0) {
      return [finding("store", "ok", `${where}: empty; serve creates the schema`)];
    }
    if (version > MIGRATIONS.length) {
      const message = `${where}: its schema (version ${version}) is newer than this facilitator's (${MIGRATIONS.length})`;
      const fix = "run the same facilitator version as the other replicas";
      return [finding("store", "error", message, fix)];
    }
    const open = await client.query<
      Pick<JournalEntry, "key" | "state" | "hashes"> & { updated_at: Date }
    >(OPEN_FOR_DOCTOR);
    const entries = open.rows.map(
      (row) => ({ ...row, updatedAt: row.updated_at.getTime() }) as unknown as JournalEntry,
    );
    const findings = [
      openSettlementsFinding("store", `${where}: schema version ${version}`, entries),
    ];
    const addresses = keysOrNone(config.loadPrivateKeys).map((key) =>
      settlementAccount(key).address.toLowerCase(),
    );
    const held = await client.query<{ address: string; owner: string }>(
      "SELECT address, owner FROM facilitator_signers WHERE address = ANY($1) AND expires_at > now()",
      [addresses],
    );
    for (const { address, owner } of held.rows) {
      const message = `key ${address} is held by the running replica ${owner}: a serve with it waits for that lease, then exits`;
      findings.push(finding("store", "warning", message, "give each replica its own key"));
    }
    return findings;
  } finally {
    await client.end().catch(() => undefined);
  }
}
