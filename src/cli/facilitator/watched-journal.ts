/** The settlement journal, telling what this settle put in it (for an interrupted settle). */
import type { Hex } from "viem";
import type { NewEntry } from "../../core/store.js";
import { Journal } from "../../store/journal.js";

/** The newest hash of this process's settlement in `store`, if it may have reached a node. */
export const mayHaveBroadcast = (store: unknown): Hex | undefined =>
  store instanceof WatchedJournal ? store.mayHaveBroadcast() : undefined;

export class WatchedJournal extends Journal {
  #key: string | undefined;
  /** The claimed settlement was journaled by an earlier run: it has been broadcast before. */
  #earlier = false;
  /** A send record of this process is on disk: from then on it may have been broadcast. */
  #durable = false;

  override claim(key: string): boolean {
    const claimed = super.claim(key);
    if (claimed) {
      this.#key = key;
      this.#earlier = this.get(key) !== undefined;
    }
    return claimed;
  }

  override recordSend(entry: NewEntry, hash: Hex, raw: Hex): Promise<void> {
    const durable = super.recordSend(entry, hash, raw);
    // Attached before the settle awaits it, so this runs before the broadcast can start.
    durable.then(
      () => {
        this.#durable = true;
      },
      () => undefined,
    );
    return durable;
  }

  /** The newest hash of this process's settlement, if it may have reached a node. */
  mayHaveBroadcast(): Hex | undefined {
    if (this.#key === undefined || !(this.#durable || this.#earlier)) return undefined;
    return this.get(this.#key)?.hashes.at(-1) as Hex | undefined;
  }
}
