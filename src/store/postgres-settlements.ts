/**
 * The store's rows: settlements, each broadcast record fenced by this replica's claim and its
 * signer's lease; payment identifiers, run by one replica at a time (a lease); the schemes' state,
 * each raise one statement, so two replicas never both keep a lower highest.
 */

import type {
  EntryState,
  IdempotencyClaim,
  JournalEntry,
  NewEntry,
  RaiseRefusal,
  RawTx,
  TxHash,
} from "../core/store.js";
import { storedHash } from "../protocol/transaction-hash.js";
import { SignerLeases } from "./postgres-leases.js";
import type { Query } from "./postgres-query.js";
import { UNSETTLED_STATES } from "./schema.js";

/** A settlement as its row holds it. */
interface Row {
  key: string;
  network: string;
  signer: string;
  tx_nonce: string;
  expect: JournalEntry["expect"] | null;
  action: JournalEntry["action"] | null;
  hashes: TxHash[];
  raws: RawTx[];
  state: EntryState;
  owner: string | null;
  updated_at: Date | null;
}

function entryOf(row: Row): JournalEntry {
  return {
    key: row.key,
    network: row.network,
    signer: row.signer,
    txNonce: Number(row.tx_nonce),
    expect: row.expect ?? undefined,
    action: row.action ?? undefined,
    hashes: row.hashes,
    raws: row.raws,
    state: row.state,
    owner: row.owner ?? undefined,
    updatedAt: row.updated_at?.getTime(),
  };
}

/** Rows matching `where` in the table, then in its archive (columns by name: matched by position). */
function fromBoth(where: string): string {
  const columns =
    "key, network, signer, tx_nonce, expect, action, hashes, raws, state, owner, updated_at";
  return `SELECT * FROM (
    SELECT ${columns}, 0 AS archived FROM facilitator_settlements WHERE ${where}
    UNION ALL
    SELECT ${columns}, 1 AS archived FROM facilitator_settlements_archive WHERE ${where}
  ) AS found ORDER BY archived`;
}

/** A settlement by one of its transactions. No LIMIT: with one, the planner scans the table. */
export const FIND_BY_TRANSACTION = fromBoth("hashes @> ARRAY[$1::text]");

/** A settlement by its key, in either table (the archive holds what retention moved). */
export const GET_SETTLEMENT = fromBoth("key = $1");

/** Start-up: every settlement still followed. */
export const LOAD_UNSETTLED = `SELECT * FROM facilitator_settlements WHERE ${UNSETTLED_STATES}`;
/** The reconciler's pass: those idle for $1 ms, oldest first. */
export const OPEN_SETTLEMENTS = `SELECT * FROM facilitator_settlements
        WHERE ${UNSETTLED_STATES}
          AND updated_at <= now() - $1 * interval '1 millisecond'
        ORDER BY updated_at LIMIT 1000`;

export class SharedSettlements {
  /** Each signer's lease: one whose lease this replica lost records no broadcast of its. */
  protected readonly leases: SignerLeases;

  constructor(
    protected readonly query: Query,
    readonly owner: string,
    /** This run of the replica: its records name it (a restarted worker is another run). */
    readonly runId: string,
    readonly signers: readonly string[],
    /** How long a claim or a lease outlives its last renewal. */
    protected readonly leaseMs: number,
  ) {
    this.leases = new SignerLeases(query, owner, signers, leaseMs);
  }

  /** What is still unsettled, at start-up. */
  async loadUnsettled(): Promise<JournalEntry[]> {
    const { rows } = await this.query<Row>("load", LOAD_UNSETTLED);
    return rows.map(entryOf);
  }

  async findByTransaction(hash: string): Promise<JournalEntry | undefined> {
    const { rows } = await this.query<Row>("find", FIND_BY_TRANSACTION, [storedHash(hash)]);
    return rows[0] ? entryOf(rows[0]) : undefined;
  }

  async get(key: string): Promise<JournalEntry | undefined> {
    const { rows } = await this.query<Row>("get", GET_SETTLEMENT, [key]);
    return rows[0] ? entryOf(rows[0]) : undefined;
  }

  async recordSend(entry: NewEntry, hash: TxHash, raw: RawTx): Promise<void> {
    const signer = entry.signer.toLowerCase();
    if (this.leases.lost.has(signer)) {
      throw new Error(`this replica lost its lease on signer ${entry.signer}`);
    }
    // A prelude (key#name) is sent under its settlement's claim.
    const claimKey = entry.key.split("#")[0];
    const { rowCount } = await this.query(
      "send",
      `INSERT INTO facilitator_settlements AS s (key, network, signer, tx_nonce, expect, action, hashes, raws, state, owner)
         SELECT $1, $2, $3, $4, $5, $12, ARRAY[$6], ARRAY[$7], 'broadcast', $11
         WHERE ($8::text IS NULL OR EXISTS (SELECT 1 FROM facilitator_signers
                         WHERE address = $8 AND owner = $9))
           AND EXISTS (SELECT 1 FROM facilitator_claims WHERE key = $10 AND owner = $9)
       ON CONFLICT (key) DO UPDATE SET network = EXCLUDED.network, signer = EXCLUDED.signer,
         tx_nonce = EXCLUDED.tx_nonce, expect = EXCLUDED.expect, action = EXCLUDED.action,
         hashes = EXCLUDED.hashes,
         raws = EXCLUDED.raws, state = 'broadcast', owner = EXCLUDED.owner, updated_at = now()`,
      [
        entry.key,
        entry.network,
        entry.signer,
        entry.txNonce,
        entry.expect ? JSON.stringify(entry.expect) : null,
        storedHash(hash),
        raw,
        // A payer's own signed transaction (a prelude) is not sent from a key of ours.
        this.signers.includes(signer) ? signer : null,
        this.owner,
        claimKey,
        this.runId,
        entry.action ? JSON.stringify(entry.action) : null,
      ],
    );
    if (rowCount !== 1) {
      // A lease that merely ran out still fences nothing: only one taken over by another does.
      throw new Error(
        "another replica took over this settlement or its signer (this process stalled past its lease); nothing was sent",
      );
    }
  }

  async recordReplace(key: string, hash: TxHash, raw: RawTx): Promise<void> {
    await this.query(
      "replace",
      `UPDATE facilitator_settlements SET hashes = hashes || $2::text, raws = raws || $3::text,
         updated_at = now() WHERE key = $1 AND NOT ($2 = ANY (hashes))`,
      [key, storedHash(hash), raw],
    );
  }

  async recordState(key: string, state: EntryState): Promise<void> {
    await this.query(
      "state",
      `UPDATE facilitator_settlements SET state = $2, updated_at = now(),
         raws = CASE WHEN $2 IN ('broadcast', 'submitted') THEN raws ELSE '{}' END
       WHERE key = $1 AND state IS DISTINCT FROM $2`,
      [key, state],
    );
  }

  async openSettlements(idleMs: number): Promise<JournalEntry[]> {
    const { rows } = await this.query<Row>("open", OPEN_SETTLEMENTS, [idleMs]);
    return rows.map(entryOf);
  }

  async markAnswered(key: string, state: "answered" | "submitted" = "answered"): Promise<void> {
    // A submitted one keeps its bytes: any replica may have to send them again.
    await this.query(
      "state",
      `UPDATE facilitator_settlements SET state = $3, owner = $2, updated_at = now(),
         raws = CASE WHEN $3 = 'submitted' THEN raws ELSE '{}' END
       WHERE key = $1`,
      [key, this.runId, state],
    );
  }

  async unmarkAnswered(key: string): Promise<void> {
    await this.query(
      "state",
      `UPDATE facilitator_settlements
          SET state = CASE WHEN state = 'submitted' THEN 'broadcast' ELSE 'landed' END,
              updated_at = now()
        WHERE key = $1 AND state IN ('answered', 'submitted') AND owner = $2`,
      [key, this.runId],
    );
  }

  async idempotencyAnswer(id: string): Promise<unknown> {
    return (await this.#paymentId(id))?.answer ?? undefined;
  }

  async #paymentId(id: string): Promise<{ fingerprint: string; answer: unknown } | undefined> {
    const { rows } = await this.query<{ fingerprint: string; answer: unknown }>(
      "payment_id",
      "SELECT fingerprint, answer FROM facilitator_payment_ids WHERE id = $1",
      [id],
    );
    return rows[0];
  }

  /** Binds `id` to `fingerprint` and takes its lease, or says why not. */
  async claimIdempotency(id: string, fingerprint: string): Promise<IdempotencyClaim> {
    const { rowCount } = await this.query(
      "payment_id",
      `INSERT INTO facilitator_payment_ids (id, fingerprint, owner, expires_at)
         VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
       ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
         WHERE facilitator_payment_ids.fingerprint = EXCLUDED.fingerprint
           AND facilitator_payment_ids.answer IS NULL
           AND (facilitator_payment_ids.owner IS NULL OR facilitator_payment_ids.expires_at < now())`,
      [id, fingerprint, this.owner, this.leaseMs],
    );
    if (rowCount === 1) return { kind: "run" };
    const row = await this.#paymentId(id);
    if (!row) return { kind: "running" };
    if (row.fingerprint !== fingerprint) return { kind: "conflict" };
    if (row.answer !== null) return { kind: "answered", answer: row.answer };
    return { kind: "running" };
  }

  async finishIdempotency(id: string, answer: unknown): Promise<void> {
    await this.query(
      "payment_id",
      `UPDATE facilitator_payment_ids SET answer = COALESCE($2::jsonb, answer), owner = NULL,
         expires_at = NULL WHERE id = $1`,
      [id, answer === undefined ? null : JSON.stringify(answer)],
    );
  }

  async raiseHighest(
    namespace: string,
    id: string,
    value: bigint,
    seenAt?: number,
  ): Promise<RaiseRefusal | undefined> {
    const { rowCount } = await this.query(
      "raise_highest",
      `INSERT INTO facilitator_scheme_state (namespace, id, highest) VALUES ($1, $2, $3)
       ON CONFLICT (namespace, id) DO UPDATE SET highest = EXCLUDED.highest, updated_at = now()
         WHERE facilitator_scheme_state.highest <= EXCLUDED.highest
           AND facilitator_scheme_state.changed_at <= $4::bigint`,
      [namespace, id, value.toString(), seenAt ?? Number.MAX_SAFE_INTEGER],
    );
    if (rowCount === 1) return undefined;
    const { rows } = await this.query<{ highest: string; changed_at: string }>(
      "raise_highest",
      `SELECT highest, changed_at::text FROM facilitator_scheme_state
        WHERE namespace = $1 AND id = $2`,
      [namespace, id],
    );
    const changedAt = Number(rows[0]?.changed_at ?? 0);
    if (seenAt !== undefined && changedAt > seenAt) return { changedAt };
    return { higher: BigInt(rows[0]?.highest ?? value) };
  }

  /** `id` changed at `at` (or may until then): every replica reads it again before a raise. */
  async markChanged(namespace: string, id: string, at: number): Promise<void> {
    await this.query(
      "mark_changed",
      `INSERT INTO facilitator_scheme_state (namespace, id, highest, changed_at)
         VALUES ($1, $2, 0, $3)
       ON CONFLICT (namespace, id) DO UPDATE
         SET changed_at = GREATEST(facilitator_scheme_state.changed_at, EXCLUDED.changed_at),
             updated_at = now()`,
      [namespace, id, Math.round(at)],
    );
  }
}
