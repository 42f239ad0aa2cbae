/**
 * The bazaar catalogue in PostgreSQL (migration 14). A new entry takes an advisory lock, so bounds
 * are counted by one replica at a time and one resource makes one entry.
 */
import type { Pool, PoolClient } from "pg";
import {
  boundRefusal,
  type Catalogue,
  type CatalogueBounds,
  type Catalogued,
  type CatalogueEntry,
  type CatalogueFilter,
  catalogueUpdate,
  searchText,
} from "../bazaar/catalogue.js";
import { inTransaction, type OnQuery, type Query, timed, withClient } from "./postgres-query.js";

/** The advisory lock new entries are added under (any key of ours; 402 seeds the hash). */
const ADD_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('facilitator_catalogue', 402))";

const lower = (values: Iterable<unknown>) => [
  ...new Set([...values].map((v) => String(v).toLowerCase())),
];

function columns(entry: CatalogueEntry): unknown[] {
  return [
    entry.key,
    JSON.stringify(entry),
    entry.type,
    entry.payTo.toLowerCase(),
    entry.payer.toLowerCase(),
    lower(entry.accepts.map((a) => a.payTo)),
    [...new Set(entry.accepts.map((a) => String(a.scheme)))],
    [...new Set(entry.accepts.map((a) => String(a.network)))],
    ["bazaar", ...entry.otherExtensions],
    searchText(entry),
    entry.lastUpdated,
  ];
}

const UPSERT = `
  INSERT INTO facilitator_catalogue (key, entry, type, pay_to, payer, accepts_pay_to, schemes,
    networks, extensions, search_text, last_updated)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry, type = EXCLUDED.type,
    accepts_pay_to = EXCLUDED.accepts_pay_to, schemes = EXCLUDED.schemes,
    networks = EXCLUDED.networks, extensions = EXCLUDED.extensions,
    search_text = EXCLUDED.search_text, last_updated = EXCLUDED.last_updated`;

/** The WHERE clause of a filter, its values numbered from `first`. */
function where(filter: CatalogueFilter, first: number): { text: string; values: unknown[] } {
  const parts: string[] = [];
  const values: unknown[] = [];
  const add = (clause: (n: string) => string, value: unknown) => {
    values.push(value);
    parts.push(clause(`$${first + values.length - 1}`));
  };
  if (filter.type !== undefined) add((n) => `type = ${n}`, filter.type);
  if (filter.payTo !== undefined)
    add((n) => `${n} = ANY (accepts_pay_to)`, filter.payTo.toLowerCase());
  if (filter.scheme !== undefined) add((n) => `${n} = ANY (schemes)`, filter.scheme);
  if (filter.network !== undefined) add((n) => `${n} = ANY (networks)`, filter.network);
  if (filter.extension !== undefined) add((n) => `${n} = ANY (extensions)`, filter.extension);
  return { text: parts.length > 0 ? `WHERE ${parts.join(" AND ")}` : "", values };
}

export class SharedCatalogue implements Catalogue {
  constructor(
    private readonly pool: Pool,
    private readonly onQuery: OnQuery,
    private readonly query: Query,
  ) {}

  /** In one transaction on one connection, under the advisory lock when the entry is new. */
  put(incoming: CatalogueEntry, bounds: CatalogueBounds): Promise<Catalogued> {
    const work = (client: PoolClient) =>
      inTransaction(client, () => this.#put(client, incoming, bounds));
    return timed("catalogue_put", this.onQuery, () => withClient(this.pool, work));
  }

  async #put(
    client: PoolClient,
    incoming: CatalogueEntry,
    bounds: CatalogueBounds,
  ): Promise<Catalogued> {
    const existing = async () => {
      const { rows } = await client.query<{ entry: CatalogueEntry }>(
        "SELECT entry FROM facilitator_catalogue WHERE key = $1 FOR UPDATE",
        [incoming.key],
      );
      return rows[0]?.entry;
    };
    let found = await existing();
    if (!found) {
      await client.query(ADD_LOCK);
      // Another replica may have added it while this one waited for the lock.
      found = await existing();
    }
    if (found) {
      const { entry, write } = catalogueUpdate(found, incoming);
      if (write) await client.query(UPSERT, columns(entry));
      return { added: false };
    }
    const { rows } = await client.query<{ by_payee: number; by_payer: number; total: number }>(
      `SELECT count(*) FILTER (WHERE pay_to = $1)::int AS by_payee,
                count(*) FILTER (WHERE payer = $2)::int AS by_payer,
                count(*)::int AS total
           FROM facilitator_catalogue`,
      [incoming.payTo.toLowerCase(), incoming.payer.toLowerCase()],
    );
    const { by_payee: byPayee, by_payer: byPayer, total } = rows[0];
    const refused = boundRefusal(incoming, { byPayee, byPayer }, bounds);
    if (refused) return { refused };
    const excess = total - Math.max(1, bounds.total) + 1;
    if (excess > 0) {
      await client.query(
        `DELETE FROM facilitator_catalogue WHERE key IN (
             SELECT key FROM facilitator_catalogue
              ORDER BY last_updated ASC, key COLLATE "C" DESC LIMIT $1)`,
        [excess],
      );
    }
    await client.query(UPSERT, columns(incoming));
    return { added: true };
  }

  async list(filter: CatalogueFilter, limit: number, offset: number) {
    const clause = where(filter, 3);
    const { rows } = await this.query(
      "catalogue_list",
      `SELECT entry FROM facilitator_catalogue ${clause.text}
        ORDER BY last_updated DESC, key COLLATE "C" ASC LIMIT $1 OFFSET $2`,
      [limit, offset, ...clause.values],
    );
    const counted = await this.query<{ total: number }>(
      "catalogue_list",
      `SELECT count(*)::int AS total FROM facilitator_catalogue ${where(filter, 1).text}`,
      clause.values,
    );
    return {
      items: rows.map((row) => row.entry as CatalogueEntry),
      total: counted.rows[0]?.total ?? 0,
    };
  }

  async search(filter: CatalogueFilter, words: readonly string[], limit: number, offset: number) {
    const clause = where(filter, 4);
    const { rows } = await this.query(
      "catalogue_search",
      `SELECT entry FROM (
         SELECT entry, key, last_updated,
                (SELECT count(*) FROM unnest($1::text[]) AS w WHERE strpos(search_text, w) > 0) AS score
           FROM facilitator_catalogue ${clause.text}) AS found
        WHERE score > 0
        ORDER BY score DESC, last_updated DESC, key COLLATE "C" ASC LIMIT $2 OFFSET $3`,
      [words, limit + 1, offset, ...clause.values],
    );
    return {
      items: rows.slice(0, limit).map((row) => row.entry as CatalogueEntry),
      more: rows.length > limit,
    };
  }
}
