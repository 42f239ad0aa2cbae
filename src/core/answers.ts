/** One success per authorization: recorded as answered before handed over, nothing awaited
 * between; a store that cannot record it hands over none (503 pending, the retry gets it). */
import { failed } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import { type JournalEntry, notRecorded, type SettlementStore, UNRECORDED } from "./store.js";

/** How often a record is set back again while the store cannot take it. */
const RETRY_MS = 500;

export class Answers {
  /** Records of this run that may say answered, though no success was handed over. */
  readonly #unsent = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly store: SettlementStore) {}

  /** Call right before handing over a success for `key`: true when the store holds it answered. */
  async answer(key: string, mined = true): Promise<boolean> {
    try {
      await this.store.markAnswered(key, mined ? "answered" : "submitted");
      return true;
    } catch (error) {
      if (!notRecorded(error)) this.#setBack(key);
      return false;
    }
  }

  /** A record of this run's that says answered, though no success was handed over. */
  unsent(entry: JournalEntry): boolean {
    return entry.owner === this.store.runId && this.#unsent.has(entry.key);
  }

  /** Waits (up to `timeoutMs`) for records still to be set back: a process about to exit. */
  async flush(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#unsent.size > 0 && Date.now() < deadline) {
      await this.#writeAll();
      if (this.#unsent.size > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  #setBack(key: string): void {
    this.#unsent.add(key);
    if (!this.#timer) this.#schedule(0);
  }

  #schedule(ms: number): void {
    this.#timer = setTimeout(async () => {
      await this.#writeAll();
      this.#timer = undefined;
      if (this.#unsent.size > 0) this.#schedule(RETRY_MS);
    }, ms);
    this.#timer.unref();
  }

  async #writeAll(): Promise<void> {
    await Promise.all(
      [...this.#unsent].map((key) =>
        this.store.unmarkAnswered(key).then(
          () => this.#unsent.delete(key),
          () => undefined,
        ),
      ),
    );
  }
}

/** A success that could not be written down first: the caller retries (it is never sent twice). */
export function unrecorded(payer: string, transactionHash: string): SettleResult {
  const pending = failed("settlement_pending", UNRECORDED, { status: 503, retryAfterSeconds: 2 });
  return { ...pending, payer, transactionHash };
}
