/**
 * What the journal keeps in memory, bounded in bytes as well as in count (issue 40): its
 * settlements (every one still followed, and the newest settled ones) and its payment
 * identifiers. At 20,000 of each, settlements of distinct payers took 45 MiB of the serving
 * thread's heap, more than every other per-payer map together; what leaves memory goes to the
 * archive (journal-history.ts), where `status` and GET /settlements still find it.
 */
import { BudgetMap, valueBytes } from "../core/byte-budget.js";
import type { JournalEntry } from "../core/store.js";
import type { IdBound } from "./journal-compaction.js";

/** Settlements kept at most (the newest settled ones; those still followed are always kept)... */
export const SETTLED_IN_MEMORY = 20_000;
/** ...and their bytes: about 7,000 settlements of an EIP-3009 payment (1.2 KB apiece). */
export const SETTLED_BYTES = 8 * 2 ** 20;
/** Payment identifiers kept at most (the newest), and their bytes: about 10,000 (400 B each). */
export const IDS_KEPT = 20_000;
export const IDS_BYTES = 4 * 2 ** 20;

/**
 * What V8 lays out for an entry past what valueBytes walks (its property array, its hidden class's
 * share, the Map's slot), measured: 1,160 bytes an entry held against 880 walked.
 */
const ENTRY_LAYOUT = 300;
/** An entry's bytes, as it is now (it changes as its transactions do). */
export const entryBytes = (entry: JournalEntry): number => ENTRY_LAYOUT + valueBytes(entry);

/** A payment identifier's bytes: its key, its binding and the answer kept (400 B measured 370). */
const idBytes = (id: string, bound: IdBound): number => valueBytes(id) + valueBytes(bound);

/** The payment identifiers kept, the oldest forgotten past either bound (`onForget` told). */
export function idsInMemory(
  onForget: (id: string, bound: IdBound) => void,
  maxBytes = IDS_BYTES,
): BudgetMap<string, IdBound> {
  return new BudgetMap(maxBytes, idBytes, { maxEntries: IDS_KEPT, onForget });
}

/**
 * The settlements kept, oldest first, with their bytes. Unlike a BudgetMap it forgets only what
 * its journal lets go (settled, not running): `forget` is asked after each change.
 */
export class EntriesInMemory extends Map<string, JournalEntry> {
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly #sizes = new Map<string, number>();
  #bytes = 0;
  /**
   * Bytes the last pass could not get under, for what it may not forget (settlements still
   * followed): the next pass waits until 5% of the budget more is held, rather than walk every
   * entry again at each settlement while they are followed.
   */
  #stuckAt = 0;

  constructor(maxEntries = SETTLED_IN_MEMORY, maxBytes = SETTLED_BYTES) {
    super();
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
  }

  /** The estimated bytes of every entry kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Sets `key` as the newest entry. */
  override set(key: string, entry: JournalEntry): this {
    this.delete(key);
    super.set(key, entry);
    this.resized(key);
    return this;
  }

  /** Counts `key`'s entry again after it changed in place. */
  resized(key: string): void {
    const entry = super.get(key);
    if (!entry) return;
    const size = entryBytes(entry);
    const change = size - (this.#sizes.get(key) ?? 0);
    this.#bytes += change;
    // A change in place (a settlement settled: its signed bytes dropped) moves the mark with it:
    // only what is added counts toward the next pass.
    if (this.#stuckAt > 0 && this.#sizes.has(key)) this.#stuckAt += change;
    this.#sizes.set(key, size);
  }

  override delete(key: string): boolean {
    this.#bytes -= this.#sizes.get(key) ?? 0;
    this.#sizes.delete(key);
    return super.delete(key);
  }

  override clear(): void {
    this.#sizes.clear();
    this.#bytes = 0;
    super.clear();
  }

  /**
   * Past either bound, forgets the oldest entries `mayForget` lets go until both are at 90% (so
   * that this runs once in many settlements, not at each); returns what it forgot.
   */
  forget(mayForget: (key: string, entry: JournalEntry) => boolean): JournalEntry[] {
    const overCount = this.size > this.maxEntries;
    if (!overCount && (this.#bytes <= this.maxBytes || this.#bytes < this.#stuckAt)) return [];
    const forgotten: JournalEntry[] = [];
    for (const [key, entry] of this) {
      if (this.size <= this.maxEntries * 0.9 && this.#bytes <= this.maxBytes * 0.9) break;
      if (!mayForget(key, entry)) continue;
      this.delete(key);
      forgotten.push(entry);
    }
    const stuck = this.#bytes > this.maxBytes * 0.9;
    this.#stuckAt = stuck ? this.#bytes + this.maxBytes * 0.05 : 0;
    return forgotten;
  }
}
