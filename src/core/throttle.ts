/** Payers whose settles keep reverting are refused a while: a revert costs us gas, them nothing. */
import { type Failure, failure } from "../protocol/errors.js";
import { arrayBytes, BudgetMap, stringBytes } from "./byte-budget.js";

export interface ThrottleOptions {
  /** Reverts charged to one payer within the window before it is refused (default 3). */
  readonly limit?: number | undefined;
  /** The window, in milliseconds (default 10 minutes). */
  readonly windowMs?: number | undefined;
  /** Told of each revert charged here (a shared store passes it on to the other replicas). */
  readonly onCharge?: ((chainId: number, payer: string) => void) | undefined;
}

/** Payers tracked at once, and bytes; past either the oldest are forgotten (memory is bounded). */
const MAX_PAYERS = 10_000;
const BUDGET_BYTES = 2 * 2 ** 20;

export class PayerThrottle {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #reverts = new BudgetMap<string, number[]>(
    BUDGET_BYTES,
    (key, times) => stringBytes(key) + arrayBytes(times.length),
    { maxEntries: MAX_PAYERS },
  );
  readonly #onCharge: ThrottleOptions["onCharge"];

  constructor(options: ThrottleOptions = {}) {
    this.#limit = Math.max(1, options.limit ?? 3);
    this.#windowMs = options.windowMs ?? 10 * 60_000;
    this.#onCharge = options.onCharge;
  }

  /** Reverts charged to one payer within the window before it is refused. */
  get limit(): number {
    return this.#limit;
  }

  /** A settlement of this payer's was mined and reverted. */
  charge(chainId: number, payer: string, now = Date.now()): void {
    this.#onCharge?.(chainId, payer);
    this.record(chainId, payer, now, now);
  }

  /** A revert charged at `at` (by another replica, say), told to no one. */
  record(chainId: number, payer: string, at: number, now = Date.now()): void {
    if (now - at >= this.#windowMs) return;
    const key = `${chainId}:${payer.toLowerCase()}`;
    const times = this.#recent(key, now);
    times.push(at);
    // In time order: the oldest of the last `limit` says when the payer is free again.
    times.sort((a, b) => a - b);
    this.#reverts.set(key, times);
  }

  /** Why this payer's settle is refused now, if it is. */
  refusal(chainId: number, payer: string, now = Date.now()): Failure | undefined {
    const key = `${chainId}:${payer.toLowerCase()}`;
    if (!this.#reverts.has(key)) return undefined;
    const times = this.#recent(key, now);
    if (times.length === 0) this.#reverts.delete(key);
    if (times.length < this.#limit) return undefined;
    const freeAt = (times[times.length - this.#limit] as number) + this.#windowMs;
    const seconds = Math.ceil((freeAt - now) / 1000);
    return failure(
      "payer_throttled",
      `${times.length} settlements from ${payer} reverted on chain in the last ${Math.round(this.#windowMs / 60_000)} min; its settles are refused for ${seconds} s`,
      { retryAfterSeconds: seconds },
    );
  }

  #recent(key: string, now: number): number[] {
    const times = (this.#reverts.get(key) ?? []).filter((t) => now - t < this.#windowMs);
    if (times.length > 0) this.#reverts.set(key, times);
    return times;
  }
}
