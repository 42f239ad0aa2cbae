/**
 * The CLI's journal: the settlement journal, also telling what this process's settle has put
 * in it, so an interrupted settle can say whether anything may have been broadcast, and its hash.
 */
import type { Hex } from "viem";
import type { NewEntry } from "../../core/store.js";
import { Journal } from "../../store/journal.js";

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

  /**
   * The newest hash of the settlement this process was running, if it may have reached a node:
   * journaled durably by this process (the broadcast follows at once), or by an earlier run.
   */
  mayHaveBroadcast(): Hex | undefined {
    if (this.#key === undefined || !(this.#durable || this.#earlier)) return undefined;
    return this.get(this.#key)?.hashes.at(-1) as Hex | undefined;
  }
}
