/**
 * The settlement journal: a transaction is appended (and fsynced) before it is broadcast, so a
 * settle cut short is followed, never sent again. One JSON object a line; a torn last line is
 * skipped. Concurrent records share one write and fdatasync (journal-commit.ts), in order.
 */
import { randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  type EntryState,
  type IdempotencyClaim,
  isAnswered,
  type JournalEntry,
  type NewEntry,
  notRecorded,
  type RaiseRefusal,
  type SettlementStore,
  type StoreStatus,
} from "../core/store.js";
import { storedHash } from "../protocol/transaction-hash.js";
import { isCatalogueLine, JournalCatalogue } from "./journal-catalogue.js";
import { GroupCommit } from "./journal-commit.js";
import { APPEND_FLAGS, endsMidLine, type JournalOptions, replay } from "./journal-file.js";
import { entryLine, FINAL, JournalHistory } from "./journal-history.js";
import { type Line, withNetwork } from "./journal-lines.js";
import { EntriesInMemory, idsInMemory, SETTLED_IN_MEMORY } from "./journal-memory.js";
import { isSchemeStateLine, JournalSchemeState } from "./journal-scheme-state.js";
import { SettledBy } from "./journal-settled.js";
import { stillUnwritable } from "./journal-space.js";

type SendLine = Extract<Line, { t: "send" }>;
type Timed = { at?: string };
/** When a line was written (unix ms), or now for one without its time. */
const timeOf = (line: object) => {
  const at = (line as Timed).at;
  return at ? Date.parse(at) : Date.now();
};

/** States whose transaction is followed until it ends (and counts against its payer meanwhile). */
const FOLLOWED: ReadonlySet<EntryState> = new Set(["broadcast", "submitted"]);

/** How long a raise waits before its line is written (coalescing raises). */
const RAISE_FLUSH_MS = 1_000;

export class Journal implements SettlementStore {
  readonly path: string | undefined;
  readonly where: string;
  readonly shared = false;
  /** This run of the process, as its records name who sent or answered a settlement. */
  readonly runId = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  /** Settlements in memory (journal-memory.ts): every one still followed, the newest settled. */
  readonly #entries: EntriesInMemory;
  /** Payment identifiers in memory, the newest; one forgotten with its answer goes to history. */
  readonly #ids = idsInMemory((id, bound) => {
    if (bound.answer !== undefined) this.#history?.later({ t: "id", id, ...bound });
  });
  readonly #schemeState = new JournalSchemeState();
  /** The bazaar catalogue, its lines in this file. */
  readonly catalogue = new JournalCatalogue((line) => this.#write(line));
  /** Identifiers whose settle runs in this process now. */
  readonly #idsRunning = new Set<string>();
  readonly #inFlight = new Set<string>();
  /** Settled history past memory, and compaction (journal-history.ts); none in memory only. */
  readonly #history: JournalHistory | undefined;

  /** A journal kept in `file` (created if missing), or only in memory when `file` is undefined. */
  constructor(file?: string, options: JournalOptions = {}) {
    this.path = file;
    this.where = file ?? "in memory";
    this.#entries = new EntriesInMemory(options.settledInMemory ?? Journal.SETTLED_IN_MEMORY);
    this.#commits = new GroupCommit(options.write);
    if (!file) return;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const snapshot = () => ({
      entries: [...this.#entries.values()],
      ids: [...this.#ids],
      others: [...this.#schemeState.all(), ...this.catalogue.lines()],
    });
    this.#history = new JournalHistory(file, this.#commits, snapshot, options);
    this.#history.read(replay(file, (record) => this.#apply(record as Line), options.warn));
    this.#commits.fd = openSync(file, APPEND_FLAGS, 0o600);
    // A line cut short by a crash would swallow the next record: end it first.
    if (endsMidLine(file)) {
      try {
        writeSync(this.#commits.fd, "\n");
      } catch {
        this.#commits.torn = true;
      }
    }
  }

  /** Compacts the file now (journal-history.ts); resolves when done. */
  compact(): Promise<void> {
    return this.#history?.compact() ?? Promise.resolve();
  }

  get(key: string): JournalEntry | undefined {
    return this.#entries.get(key);
  }

  /** Entries broadcast (or about to be) with no final answer yet. */
  *unsettled(): Generator<JournalEntry> {
    for (const entry of this.#entries.values()) if (FOLLOWED.has(entry.state)) yield entry;
  }

  /** Marks a settlement of `key` as running in this process; false if one already is. */
  claim(key: string): boolean {
    if (this.#inFlight.has(key)) return false;
    this.#inFlight.add(key);
    return true;
  }

  release(key: string): void {
    this.#inFlight.delete(key);
  }

  /** Resolves once the record is on disk: await it before broadcasting the first transaction. */
  recordSend(entry: NewEntry, hash: string, raw: string): Promise<void> {
    return this.#write({ t: "send", ...entry, owner: this.runId, hash, raw });
  }

  /** In memory, else in the archive. */
  async idempotencyAnswer(id: string): Promise<unknown> {
    const kept = this.#ids.get(id);
    return kept ? kept.answer : this.#history?.answer(id);
  }

  async findByTransaction(hash: string): Promise<JournalEntry | undefined> {
    // Kept as storedHash spells them (#apply): a Solana signature's case is its own.
    const wanted = storedHash(hash);
    for (const entry of this.#entries.values()) if (entry.hashes.includes(wanted)) return entry;
    return this.#history?.entry(`h:${wanted}`);
  }

  /** A settlement no longer in memory, from the archive (status, GET /settlements). */
  async findArchived(key: string): Promise<JournalEntry | undefined> {
    return this.#entries.get(key) ?? this.#history?.entry(`k:${key}`);
  }

  /** Since when this journal keeps settlements (unix ms): its oldest archived, or in memory. */
  async keptSince(): Promise<number | undefined> {
    const archived = await this.#history?.oldest();
    return archived ?? this.#entries.values().next().value?.updatedAt;
  }

  /** Resolves once on disk: await it before broadcasting a replacement (same nonce, higher fee). */
  recordReplace(key: string, hash: string, raw: string): Promise<void> {
    return this.#write({ t: "replace", key, hash, raw });
  }

  /** Resolves once on disk; `answered` must be, before success is answered. */
  recordState(key: string, state: EntryState): Promise<void> {
    if (this.#entries.get(key)?.state === state) return Promise.resolve();
    return this.#write({ t: "state", key, state });
  }

  async openSettlements(idleMs: number): Promise<JournalEntry[]> {
    const before = Date.now() - idleMs;
    return [...this.#entries.values()]
      .filter((e) => FOLLOWED.has(e.state) && (e.updatedAt ?? 0) <= before)
      .sort((a, b) => (a.updatedAt ?? 0) - (b.updatedAt ?? 0));
  }

  /** Resolves once on disk: a success is answered for `key`, by this run. */
  markAnswered(key: string, state: "answered" | "submitted" = "answered"): Promise<void> {
    return this.#write({ t: "state", key, state, owner: this.runId });
  }

  unmarkAnswered(key: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (!entry || !isAnswered(entry.state) || entry.owner !== this.runId) return Promise.resolve();
    // A success answered before it was mined goes back to being followed, not to landed.
    return this.#write({
      t: "state",
      key,
      state: entry.state === "submitted" ? "broadcast" : "landed",
    });
  }

  claimIdempotency(id: string, fingerprint: string): IdempotencyClaim {
    const known = this.#ids.get(id);
    if (known && known.fingerprint !== fingerprint) return { kind: "conflict" };
    if (known?.answer !== undefined) return { kind: "answered", answer: known.answer };
    if (this.#idsRunning.has(id)) return { kind: "running" };
    this.#idsRunning.add(id);
    // The binding itself is written down once; a lost write only loses the conflict check.
    if (!known) void this.#write({ t: "id", id, fingerprint }).catch(() => undefined);
    return { kind: "run" };
  }

  raiseHighest(
    namespace: string,
    id: string,
    value: bigint,
    seenAt?: number,
  ): RaiseRefusal | undefined {
    const refused = this.#schemeState.raise(namespace, id, value, seenAt);
    if (this.#commits.fd === undefined || refused !== undefined) return refused;
    // Written a second later, a line per id: the hot path waits for no disk (the port allows it).
    this.#raiseFlush ??= setTimeout(() => this.#flushRaises(), RAISE_FLUSH_MS);
    this.#raiseFlush.unref();
    return undefined;
  }

  async markChanged(namespace: string, id: string, at: number): Promise<void> {
    const line: Line = { t: "changed-at", namespace, id, changedAt: at };
    this.#apply(line);
    if (this.#commits.fd !== undefined) await this.#write(line);
  }

  #raiseFlush: NodeJS.Timeout | undefined;

  #flushRaises(): void {
    this.#raiseFlush = undefined;
    for (const line of this.#schemeState.owed()) void this.#write(line).catch(() => undefined);
  }

  async finishIdempotency(id: string, answer: unknown): Promise<void> {
    this.#idsRunning.delete(id);
    const known = this.#ids.get(id);
    if (!known || answer === undefined) return;
    await this.#write({ t: "id", id, fingerprint: known.fingerprint, answer });
  }

  /** Unreachable from a failed write until a record, or a probe beside the file, goes through. */
  async status(): Promise<StoreStatus> {
    const reachable: StoreStatus = { shared: false, where: this.where, reachable: true };
    const failed = this.#commits.failure;
    if (!failed || !this.path) return reachable;
    const error = await stillUnwritable(this.path, failed.message);
    if (error === undefined && this.#commits.failure === failed) this.#commits.failure = undefined;
    return error === undefined ? reachable : { ...reachable, reachable: false, error };
  }

  /** Who settled with us (a count per payer and asset), kept past the entries themselves. */
  readonly #settledBy = new SettledBy();

  readonly settlementsOf: NonNullable<SettlementStore["settlementsOf"]> = (network, who, atMost) =>
    Promise.resolve(this.#settledBy.count(network, who, atMost));

  close(): void {
    clearTimeout(this.#raiseFlush);
    this.#raiseFlush = undefined;
    if (this.#commits.fd !== undefined) {
      const lines = this.#schemeState.owed().map((line) => `${JSON.stringify(line)}\n`);
      try {
        if (lines.length > 0) writeSync(this.#commits.fd, lines.join(""));
      } catch {
        // A full disk: those raises are lost, as a crash would lose them.
      }
      closeSync(this.#commits.fd);
    }
    this.#commits.fd = undefined;
  }

  readonly #commits: GroupCommit;

  /**
   * A settlement's records apply once on disk (or possibly on disk), so one the disk refused is
   * not taken as made; other lines are decided against memory and followed by their line.
   */
  #write(line: Line): Promise<void> {
    const settlement = line.t === "send" || line.t === "replace" || line.t === "state";
    if (this.#commits.fd === undefined || !settlement) this.#apply(line);
    if (this.#commits.fd === undefined) return Promise.resolve();
    return this.#commits
      .append(`${JSON.stringify({ ...line, at: new Date().toISOString() })}\n`)
      .then(
        () => {
          if (settlement) this.#apply(line);
          this.#history?.wrote();
        },
        (error: unknown) => {
          if (settlement && !notRecorded(error)) this.#apply(line);
          throw error;
        },
      );
  }

  /** Settled entries kept in memory (a replay refused without the chain); unsettled ones always. */
  static readonly SETTLED_IN_MEMORY = SETTLED_IN_MEMORY;

  #evict(): void {
    const mayForget = (key: string, entry: JournalEntry) =>
      FINAL.has(entry.state) && !this.#inFlight.has(key);
    for (const entry of this.#entries.forget(mayForget)) this.#history?.later(entryLine(entry));
  }

  /** A success answered: its payer and asset settled with us then. */
  #remember({ state, expect, network, key, updatedAt }: Omit<JournalEntry, "raws">): void {
    if (state === "answered" && expect)
      this.#settledBy.remember(network, key, expect, updatedAt ?? 0);
  }

  #apply(line: Line): void {
    if (isSchemeStateLine(line)) {
      this.#schemeState.apply(line);
      return;
    }
    if (isCatalogueLine(line)) {
      this.catalogue.apply(line);
      return;
    }
    if (line.t === "archive") {
      if (this.#history) this.#history.archive.through = line.through;
      return;
    }
    if (line.t === "id") {
      const at = timeOf(line);
      this.#ids.set(line.id, { fingerprint: line.fingerprint, answer: line.answer, at });
      return;
    }
    if (line.t === "entry") {
      const { t: _t, ...entry } = withNetwork(line);
      this.#entries.set(entry.key, { ...entry, raws: [] });
      this.#remember({ ...entry, updatedAt: entry.updatedAt ?? Date.now() });
      this.#evict();
      return;
    }
    if (line.t === "send") {
      const { t: _t, hash, raw, at: _at, ...entry } = withNetwork(line as SendLine & Timed);
      this.#entries.set(entry.key, {
        ...entry,
        hashes: [storedHash(hash)],
        raws: [raw],
        state: "broadcast",
        updatedAt: timeOf(line),
      });
      this.#evict();
      return;
    }
    const entry = this.#entries.get(line.key);
    if (!entry) return;
    if (line.t === "replace") {
      const hash = storedHash(line.hash);
      if (!entry.hashes.includes(hash)) {
        entry.hashes.push(hash);
        entry.raws.push(line.raw);
        this.#entries.resized(line.key);
      }
      return;
    }
    entry.state = line.state;
    if (line.owner !== undefined) entry.owner = line.owner;
    entry.updatedAt = timeOf(line);
    this.#remember(entry);
    // The signed bytes are only needed to re-broadcast an unsettled transaction.
    if (!FOLLOWED.has(line.state)) entry.raws = [];
    this.#entries.resized(line.key);
  }
}
