/**
 * The settlement store in PostgreSQL, shared by `serve` replicas. Money safety is the database's:
 * a primary key on the authorization, atomic claims, leases that end with their replica; a
 * broadcast is recorded only while this replica holds its claim and its signer's lease.
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Pool, PoolConfig } from "pg";
import type { Address } from "viem";
import type {
  HeldElsewhere,
  JournalEntry,
  SettlementStore,
  StoreStatus,
  Waste,
} from "../core/store.js";
import { SharedCatalogue } from "./postgres-catalogue.js";
import type { SignerWait } from "./postgres-leases.js";
import { migrate } from "./postgres-migrate.js";
import { type OnQuery, queryOn, unavailable } from "./postgres-query.js";
import { releaseShared, reserveShared, STALE_RESERVATIONS } from "./postgres-reservations.js";
import { DEFAULT_RETAIN_DAYS, SharedRetention } from "./postgres-retention.js";
import { SharedSettlements } from "./postgres-settlements.js";
import { type RevertListener, SharedWaste } from "./postgres-waste.js";

export interface PostgresStoreOptions {
  /** The signing keys this replica sends from: each is leased to it while it runs. */
  readonly signers: readonly Address[];
  /** How long a claim or a signer lease outlives its last renewal (default 15 s). */
  readonly leaseMs?: number | undefined;
  /** How long to wait at start-up for another owner's lease on a signer to end (default: one lease). */
  readonly signerWaitMs?: number | undefined;
  /** Told at once when that wait starts: whose leases, until when, and how long it waits. */
  readonly onSignerWait?: ((wait: SignerWait) => void) | undefined;
  /** Told how long each query took (metrics). */
  readonly onQuery?: OnQuery;
  /** This replica's name in the store (default host:pid). */
  readonly owner?: string | undefined;
  /** Final settlements older than this many days move to the archive (0: never; default 90). */
  readonly retainDays?: number | undefined;
}

/** The database URL without its password, for banners and logs. */
export function redactStoreUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}

/** How the store's pool connects: bounds on waiting, and each connection's durability. */
export function poolConfig(url: string): PoolConfig {
  return {
    connectionString: url,
    max: 16,
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
    // A query the server never answers must not hold a settle forever.
    query_timeout: 10_000,
    // Durable once committed, whatever the server's default (awaited before the pool lends it).
    onConnect: async (client) => {
      await client.query("SET synchronous_commit TO on");
    },
  };
}

const ignore = () => undefined;

export class PostgresStore extends SharedSettlements implements SettlementStore {
  readonly shared = true;
  readonly where: string;
  readonly #pool: Pool;
  readonly #onQuery: OnQuery;
  /** Claims this process holds (the database alone cannot tell two settles of one process apart). */
  readonly #claimed = new Set<string>();
  /** Claims being given back, until their row is gone. */
  readonly #releasing = new Map<string, Promise<void>>();
  #unsettled: JournalEntry[] = [];
  #renewal: NodeJS.Timeout | undefined;
  readonly #waste = new SharedWaste(this.query, this.owner);
  /** Per payer slot(s), the end of the queue of reservations waiting to be decided. */
  readonly #slotQueues = new Map<string, Promise<void>>();
  /** The bazaar catalogue, shared by every replica (postgres-catalogue.ts). */
  readonly catalogue: SharedCatalogue;
  /** Moves final settlements past --retain-days to the archive (postgres-retention.ts). */
  readonly retention: SharedRetention;

  private constructor(pool: Pool, url: string, options: PostgresStoreOptions) {
    const owner = options.owner ?? `${os.hostname()}:${process.pid}`;
    super(
      queryOn(pool, options.onQuery),
      owner,
      `${owner}:${randomUUID().slice(0, 8)}`,
      options.signers.map((a) => a.toLowerCase()),
      options.leaseMs ?? 15_000,
    );
    this.#pool = pool;
    this.where = redactStoreUrl(url);
    this.#onQuery = options.onQuery;
    this.catalogue = new SharedCatalogue(pool, this.#onQuery, this.query);
    const days = options.retainDays ?? DEFAULT_RETAIN_DAYS;
    this.retention = new SharedRetention(this.query, owner, days);
  }

  readonly chargeRevert = (chainId: number, payer: string, waste?: Waste) =>
    this.#waste.charge(chainId, payer, waste);
  readonly onRevertElsewhere = (listener: RevertListener) => this.#waste.listen(listener);
  readonly settlementsOf: NonNullable<SettlementStore["settlementsOf"]> = (network, who, atMost) =>
    this.#waste.settlementsOf(network, who, atMost);

  /** Connects, migrates, leases this replica's signers and loads what is still unsettled. */
  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresStore> {
    const { default: pg } = await import("pg");
    const pool = new pg.Pool(poolConfig(url));
    // An idle connection the server dropped (a restart) must not take the process down.
    pool.on("error", () => undefined);
    const store = new PostgresStore(pool, url, options);
    try {
      await migrate(pool);
      await store.leases.take(options.signerWaitMs ?? store.leaseMs + 1_000, options.onSignerWait);
      store.#unsettled = await store.loadUnsettled();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
    store.#renewal = setInterval(() => void store.#renew(), store.leaseMs / 3);
    store.#renewal.unref();
    return store;
  }

  /** Renews this replica's leases; a signer lease found taken by another is lost for good. */
  async #renew(): Promise<void> {
    try {
      for (const table of ["facilitator_claims", "facilitator_payment_ids"]) {
        await this.query(
          "renew",
          `UPDATE ${table} SET expires_at = now() + $2 * interval '1 millisecond' WHERE owner = $1`,
          [this.owner, this.leaseMs],
        );
      }
      await this.leases.renew();
      await this.query("renew", STALE_RESERVATIONS);
      await this.query(
        "renew",
        "DELETE FROM facilitator_payer_reverts WHERE at < now() - interval '1 day'",
      );
      await this.#waste.pull();
    } catch {
      // The store is away: leases run down; records of broadcasts are refused until it is back.
    }
  }

  async reserveShared<R>(
    key: string,
    spends: readonly { readonly slot: string; readonly amount: bigint }[],
    decide: (held: readonly HeldElsewhere[]) => Promise<R | undefined>,
  ): Promise<R | undefined> {
    const started = performance.now();
    let decideFailed: unknown;
    const guarded = (held: readonly HeldElsewhere[]) =>
      decide(held).catch((error: unknown) => {
        decideFailed = error;
        throw error;
      });
    // One settle per payer slot waits on the database's lock; the others wait here, holding no connection.
    const queue = [...new Set(spends.map((s) => s.slot))].sort().join(" ");
    const previous = this.#slotQueues.get(queue) ?? Promise.resolve();
    let done = () => {};
    const mine = new Promise<void>((resolve) => {
      done = resolve;
    });
    const tail = previous.then(() => mine);
    this.#slotQueues.set(queue, tail);
    try {
      await previous;
      return await reserveShared(this.#pool, this.owner, key, spends, guarded);
    } catch (error) {
      // The decision's own chain reads fail as themselves; everything else is the store's.
      if (error === decideFailed) throw error;
      throw unavailable(error);
    } finally {
      done();
      if (this.#slotQueues.get(queue) === tail) this.#slotQueues.delete(queue);
      this.#onQuery?.("reserve", (performance.now() - started) / 1000);
    }
  }

  async releaseShared(key: string, landedIn?: bigint): Promise<void> {
    await releaseShared(this.#pool, key, landedIn).catch(() => undefined);
  }

  /** Whether the database answers, and which signers this replica holds the lease of. */
  async status(): Promise<StoreStatus> {
    const error = await this.query("ping", "SELECT 1").then(
      () => undefined,
      (e: Error) => e.message,
    );
    return {
      shared: true,
      where: this.where,
      reachable: error === undefined,
      ...(error ? { error } : {}),
      signersHeld: this.signers.filter((a) => !this.leases.lost.has(a)),
      signersLost: [...this.leases.lost],
    };
  }

  async claim(key: string): Promise<boolean> {
    // A claim of this process being given back (after a success went out): wait for it.
    await this.#releasing.get(key);
    if (this.#claimed.has(key)) return false;
    this.#claimed.add(key);
    let taken = false;
    try {
      // A claim of this owner not held in this process was left by a worker that died: take it.
      const { rowCount } = await this.query(
        "claim",
        `INSERT INTO facilitator_claims (key, owner, expires_at)
           VALUES ($1, $2, now() + $3 * interval '1 millisecond')
         ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE facilitator_claims.expires_at < now() OR facilitator_claims.owner = EXCLUDED.owner`,
        [key, this.owner, this.leaseMs],
      );
      taken = rowCount === 1;
      return taken;
    } finally {
      if (!taken) this.#claimed.delete(key);
    }
  }

  async release(key: string): Promise<void> {
    if (!this.#claimed.has(key) || this.#releasing.has(key)) return this.#releasing.get(key);
    // If this fails, the lease runs out. Held until the row is gone, so a settle here waits rather
    // than lose its new claim to this delete.
    const releasing = this.query(
      "release",
      "DELETE FROM facilitator_claims WHERE key = $1 AND owner = $2",
      [key, this.owner],
    )
      .then(ignore, ignore)
      .finally(() => {
        this.#claimed.delete(key);
        this.#releasing.delete(key);
      });
    this.#releasing.set(key, releasing);
    await releasing;
  }

  unsettled(): Iterable<JournalEntry> {
    return this.#unsettled;
  }

  retain(): Promise<number> {
    return this.retention.due();
  }

  /** Gives up this replica's claims and signer leases, so another may take them at once. */
  async close(): Promise<void> {
    if (this.#renewal) clearInterval(this.#renewal);
    this.#renewal = undefined;
    await this.retention.stop();
    for (const table of ["facilitator_claims", "facilitator_signers"]) {
      await this.query("close", `DELETE FROM ${table} WHERE owner = $1`, [this.owner]).catch(
        () => undefined,
      );
    }
    await this.#pool.end().catch(() => undefined);
  }
}
