/**
 * What the journal keeps in memory, bounded in bytes and count (issue 40: 20,000 settlements took
 * 45 MiB); what leaves memory goes to the archive, where lookups still find it.
 */
import { BudgetMap, valueBytes } from "../core/byte-budget.js";
import type { JournalEntry } from "../core/store.js";
import type { IdBound } from "./journal-archive.js";

/** Settlements kept at most (the newest settled ones; those still followed are always kept)... */
export const SETTLED_IN_MEMORY = 20_000;
/** ...and their bytes: about 7,000 settlements of an EIP-3009 payment (1.2 KB apiece). */
const SETTLED_BYTES = 8 * 2 ** 20;
/** Payment identifiers kept at most (the newest), and their bytes: about 10,000 (400 B each). */
const IDS_KEPT = 20_000;
const IDS_BYTES = 4 * 2 ** 20;

/** V8's layout of an entry past what valueBytes walks, measured (1,160 bytes held, 880 walked). */
const ENTRY_LAYOUT = 300;
/** An entry's bytes, as it is now (it changes as its transactions do). */
export const entryBytes = (entry: JournalEntry): number => ENTRY_LAYOUT + valueBytes(entry);

/** A payment identifier's bytes: its key, its binding and the answer kept (400 B measured 370). */
const idBytes = (id: string, bound: IdBound): number => valueBytes(id) + valueBytes(bound);

/** The payment identifiers kept, the oldest forgotten past either bound (`onForget` told). */
export function idsInMemory(onForget: (id: string, bound: IdBound) => void) {
  return new BudgetMap(IDS_BYTES, idBytes, { maxEntries: IDS_KEPT, onForget });
}

/** The settlements kept, oldest first; forgets only what the journal lets go. */
export class EntriesInMemory extends Map<string, JournalEntry> {
  readonly #sizes = new Map<string, number>();
  /** The estimated bytes of every entry kept. */
  bytes = 0;
  /** Bytes the last pass could not shed (followed settlements): the next waits for 5% more. */
  #stuckAt = 0;

  constructor(
    readonly maxEntries = SETTLED_IN_MEMORY,
    readonly maxBytes = SETTLED_BYTES,
  ) {
    super();
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
    this.bytes += change;
    // A change in place moves the mark with it: only what is added counts toward the next pass.
    if (this.#stuckAt > 0 && this.#sizes.has(key)) this.#stuckAt += change;
    this.#sizes.set(key, size);
  }

  override delete(key: string): boolean {
    this.bytes -= this.#sizes.get(key) ?? 0;
    this.#sizes.delete(key);
    return super.delete(key);
  }

  /** Past either bound, forgets the oldest `mayForget` lets go down to 90%; returns them. */
  forget(mayForget: (key: string, entry: JournalEntry) => boolean): JournalEntry[] {
    const overCount = this.size > this.maxEntries;
    if (!overCount && (this.bytes <= this.maxBytes || this.bytes < this.#stuckAt)) return [];
    const forgotten: JournalEntry[] = [];
    for (const [key, entry] of this) {
      if (this.size <= this.maxEntries * 0.9 && this.bytes <= this.maxBytes * 0.9) break;
      if (!mayForget(key, entry)) continue;
      this.delete(key);
      forgotten.push(entry);
    }
    const stuck = this.bytes > this.maxBytes * 0.9;
    this.#stuckAt = stuck ? this.bytes + this.maxBytes * 0.05 : 0;
    return forgotten;
  }
}
