/**
 * Retention (`--retain-days`): final settlements past it move to facilitator_settlements_archive,
 * which lookups still read; nothing is deleted. A batch is one statement that skips rows another
 * transaction holds and deletes by ctid (a join by key would scan): a settle never waits on it.
 */
import type { Query } from "./postgres-query.js";
import { FINAL_STATES } from "./schema.js";

/** The default, 90 days: past settlementsOf's 30 days, and a quarter's books. */
export const DEFAULT_RETAIN_DAYS = 90;

/** Rows moved by one statement: short enough that its locks last milliseconds. */
export const RETENTION_BATCH = 1_000;
/** Most batches one pass moves; the rest waits for the next pass. */
const BATCHES_PER_PASS = 100;
/** How often a pass is due, across every replica of the store. */
const RETENTION_EVERY_MS = 5 * 60_000;

const COLUMNS =
  "key, network, signer, tx_nonce, expect, action, hashes, raws, state, owner, created_at, updated_at";

/** One batch: $1 days kept, $2 rows at most; answers one row per settlement moved. */
export const MOVE_FINAL = `WITH picked AS (
    SELECT ctid FROM facilitator_settlements
     WHERE ${FINAL_STATES} AND updated_at < now() - $1 * interval '1 day'
     ORDER BY updated_at LIMIT $2
     FOR UPDATE SKIP LOCKED
  ), moved AS (
    DELETE FROM facilitator_settlements
     WHERE ctid = ANY (ARRAY(SELECT ctid FROM picked))
    RETURNING *
  )
  INSERT INTO facilitator_settlements_archive AS a (${COLUMNS})
    SELECT ${COLUMNS} FROM moved
  ON CONFLICT (key) DO UPDATE SET ${COLUMNS.split(", ")
    .filter((c) => c !== "key")
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(", ")}
  RETURNING a.key`;

/** Whether the chore is due, and this replica takes it: one replica per period, whichever asks first. */
const TAKE_CHORE = `INSERT INTO facilitator_chores AS c (name, due_at, owner)
    VALUES ($1, now() + $2 * interval '1 millisecond', $3)
  ON CONFLICT (name) DO UPDATE SET due_at = EXCLUDED.due_at, owner = EXCLUDED.owner
    WHERE c.due_at <= now()
  RETURNING owner`;

export class SharedRetention {
  #running: Promise<number> | undefined;
  #stopped = false;
  /** The chore is not asked for again before this (unix ms). */
  #nextAsk = 0;

  constructor(
    private readonly query: Query,
    private readonly owner: string,
    private readonly days: number,
  ) {}

  /** Starts a pass unless one ran within the period (here or elsewhere); never rejects. */
  due(): Promise<number> {
    if (this.days <= 0 || this.#stopped || Date.now() < this.#nextAsk) return Promise.resolve(0);
    // Asked at most every fifth of the period: the chore's row says, for every replica, when it is due.
    this.#nextAsk = Date.now() + RETENTION_EVERY_MS / 5;
    const take = ["retention", RETENTION_EVERY_MS, this.owner];
    this.#running ??= this.query("chore", TAKE_CHORE, take)
      .then(({ rows }) => (rows.length === 0 ? 0 : this.pass()))
      .catch(() => 0)
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  /** Moves what is past retention now, batch by batch, whichever replica ran last (tests). */
  async pass(): Promise<number> {
    let moved = 0;
    for (let batch = 0; batch < BATCHES_PER_PASS && !this.#stopped; batch++) {
      const { rowCount } = await this.query("retain", MOVE_FINAL, [this.days, RETENTION_BATCH]);
      moved += rowCount;
      if (rowCount < RETENTION_BATCH) break;
    }
    return moved;
  }

  /** Stops after the batch in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}
