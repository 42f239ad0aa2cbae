/**
 * One success per authorization, whatever fails. Before a success is handed to a caller, the store
 * must hold that this process is answering it (state `answering`); once handed over, that it was
 * answered. So:
 * - the store unreachable, or a write whose outcome is unknown: no success is handed over (the
 *   caller hears "pending, retry"), and once the store answers again the entry is set back to
 *   `landed`, so the retry gets the success;
 * - this process killed between the two writes: the entry stays `answering` by a process that no
 *   longer runs, and the next settle of it answers the success (it was most likely never handed
 *   over: the second write follows the hand-over within a turn of the event loop);
 * - a retry while another live process is answering it is told to retry in a moment.
 */
import { failure } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import { type JournalEntry, notRecorded, type SettlementStore, UNRECORDED } from "./store.js";

/** How often an answer's end is written again while the store cannot take it. */
const RETRY_MS = 500;

export type AnsweringVerdict =
  /** A success was handed to a caller: the authorization is spent. */
  | "answered"
  /** No success was handed to anyone: answer it now. */
  | "unanswered"
  /** Another process is answering it right now. */
  | "in-progress";

export class Answers {
  readonly #store: SettlementStore;
  /** Answers begun here whose end is not yet in the store, and what it is. */
  readonly #ending = new Map<string, "answered" | "landed">();
  #timer: NodeJS.Timeout | undefined;

  constructor(store: SettlementStore) {
    this.#store = store;
  }

  /**
   * Call before handing a success for `key` over: true when the store holds that this process is
   * answering it; then the success may be handed over (and the end is written just after).
   */
  async begin(key: string): Promise<boolean> {
    try {
      await this.#store.beginAnswer(key);
    } catch (error) {
      // It may have been written: set it back to `landed` as soon as the store answers.
      if (!notRecorded(error)) this.#end(key, "landed");
      return false;
    }
    this.#end(key, "answered");
    return true;
  }

  /** Whether a success was handed over for an entry found `answering`. */
  async verdict(entry: JournalEntry): Promise<AnsweringVerdict> {
    const owner = entry.owner;
    if (owner === this.#store.runId) {
      // This process began it: it knows whether it handed the success over.
      return this.#ending.get(entry.key) === "landed" ? "unanswered" : "answered";
    }
    if (owner !== undefined && (await this.#store.runAlive(owner))) return "in-progress";
    return "unanswered";
  }

  /**
   * Writes what is still to be written (a process about to exit, a store about to close); gives up
   * after `timeoutMs` if the store cannot take it (then a retry of those may be answered again).
   */
  async flush(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#ending.size > 0 && Date.now() < deadline) {
      await this.#writeEnds();
      if (this.#ending.size > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  #end(key: string, outcome: "answered" | "landed"): void {
    this.#ending.set(key, outcome);
    // After the caller has the answer: the handler writes it in this turn of the event loop.
    if (!this.#timer) this.#timer = setTimeout(() => void this.#flush(), 0);
    this.#timer.unref();
  }

  async #flush(): Promise<void> {
    await this.#writeEnds();
    this.#timer = undefined;
    if (this.#ending.size > 0) {
      this.#timer = setTimeout(() => void this.#flush(), RETRY_MS);
      this.#timer.unref();
    }
  }

  async #writeEnds(): Promise<void> {
    const ending = [...this.#ending];
    await Promise.all(
      ending.map(([key, outcome]) =>
        this.#store.endAnswer(key, outcome).then(
          () => {
            if (this.#ending.get(key) === outcome) this.#ending.delete(key);
          },
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

/** Another process is handing this success over right now. */
export function beingAnswered(payer: string | undefined): SettleResult {
  return {
    ok: false,
    payer,
    failure: failure(
      "settlement_in_progress",
      "this authorization's settlement is being answered by another process right now; retry in a moment",
      { retryAfterSeconds: 1 },
    ),
  };
}
