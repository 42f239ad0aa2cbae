/**
 * One success per authorization, whatever fails. A success is written down as answered, by this
 * run of this process, before it is handed to the caller, and handed over at once after (nothing
 * is awaited in between: the claim on the settlement is given back later). So:
 * - no two requests get a success for one authorization: the second finds it answered;
 * - the store unreachable when the record is made: no success is handed over; the caller hears
 *   503 "pending, retry" with the hash, and the retry (once the store is back) gets the success;
 * - a record whose outcome is unknown (the connection lost mid-write): no success is handed over
 *   either, and as soon as the store answers, a record of this run's is set back to `landed`, so
 *   the retry gets the success.
 * What remains: a process killed between the record and the hand-over, or an answer lost in the
 * network after it left, is a payment answered once that its caller never heard. The window is the
 * store's commit plus the write of the answer: a few milliseconds under load (bench:faults kills a
 * replica mid-run and sees it about once in four runs of 2,000 payments), not microseconds.
 */
import { failure } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import { type JournalEntry, notRecorded, type SettlementStore, UNRECORDED } from "./store.js";

/** How often a record is set back again while the store cannot take it. */
const RETRY_MS = 500;

export class Answers {
  readonly #store: SettlementStore;
  /** Records of this run that may say answered, though no success was handed over. */
  readonly #unsent = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(store: SettlementStore) {
    this.#store = store;
  }

  /**
   * Call right before handing a success for `key` over: true when the store holds it answered.
   * `mined`: false when the success is for a transaction only submitted, which the store then
   * keeps following until it lands.
   */
  async answer(key: string, mined = true): Promise<boolean> {
    try {
      await this.#store.markAnswered(key, mined ? "answered" : "submitted");
      return true;
    } catch (error) {
      if (!notRecorded(error)) this.#setBack(key);
      return false;
    }
  }

  /** A record of this run's that says answered, though no success was handed over. */
  unsent(entry: JournalEntry): boolean {
    return entry.owner === this.#store.runId && this.#unsent.has(entry.key);
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
        this.#store.unmarkAnswered(key).then(
          () => this.#unsent.delete(key),
          () => undefined,
        ),
      ),
    );
  }
}

/** A success that could not be written down first: the caller retries (it is never sent twice). */
export function unrecorded(payer: string, transactionHash: string): SettleResult {
  return {
    ok: false,
    payer,
    transactionHash,
    failure: failure("settlement_pending", UNRECORDED, { status: 503, retryAfterSeconds: 2 }),
  };
}
