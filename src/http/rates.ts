/** Rates on /verify and /settle per named API key or client address: past them, 429. */
import { setNewest } from "../core/newest.js";
import { type Bucket, secondsToOne, tokensAt } from "../core/settle-rate.js";
import { type Failure, failure } from "../protocol/errors.js";

/** A named key's rate when neither it nor the keys file names one: ten a second, sustained. */
export const DEFAULT_KEY_RATE = 600;
export const MAX_RATE = 1_000_000;
/** Buckets kept; past it the least recently used go (a forgotten bucket comes back full). */
const MAX_BUCKETS = 100_000;

export class RateBuckets {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;
  readonly #max: number;

  constructor(options: { now?: () => number; maxBuckets?: number } = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#max = options.maxBuckets ?? MAX_BUCKETS;
  }

  /** Takes one request of `who` at `perMinute`: undefined when it fits, else seconds to wait. */
  take(who: string, perMinute: number): number | undefined {
    const now = this.#now();
    const tokens = tokensAt(this.#buckets.get(who), perMinute, now);
    // Most recently used last: the first in the map is the one to forget.
    setNewest(this.#buckets, who, { tokens: tokens < 1 ? tokens : tokens - 1, at: now }, this.#max);
    return tokens < 1 ? secondsToOne(tokens, perMinute) : undefined;
  }

  get size(): number {
    return this.#buckets.size;
  }
}

/** Whose bucket a request takes from: its named key's, else its address's (if set), else none. */
export function rateOf(
  who: { readonly caller?: { readonly name: string } | undefined; readonly perMinute?: number },
  client: string | undefined,
  perClient: number | undefined,
): { readonly bucket: string; readonly perMinute: number; readonly whose: string } | undefined {
  const name = who.caller?.name;
  if (who.perMinute !== undefined && name !== undefined) {
    return { bucket: `key ${name}`, perMinute: who.perMinute, whose: `the API key ${name}` };
  }
  if (perClient === undefined || !client) return undefined;
  return { bucket: `client ${client}`, perMinute: perClient, whose: "this client address" };
}

/** The 429 for `who` ("the API key shop-a", "this client address") over `perMinute`. */
export function rateLimited(who: string, perMinute: number, seconds: number): Failure {
  return failure(
    "rate_limited",
    `${who} is over its rate of ${perMinute} requests a minute on /verify and /settle; retry in ${seconds} s`,
    { retryAfterSeconds: seconds },
  );
}
