/**
 * Settlements a minute per payer and per payee (`--rate-per-payer`). A settlement that lands costs
 * us gas as much as one that reverts, and the revert throttle and the wasted-gas budget see only
 * the second kind: this bounds the first. A rate of N is a bucket of N settlements refilled at N a
 * minute (bursts of N, N a minute sustained); every address the payment names as payer or payee
 * takes from its own. Counted in this process (each replica counts its own).
 */
import { type Failure, failure } from "../protocol/errors.js";
import type { Parties } from "./deny-list.js";

/**
 * The CLI's default: a settlement a second sustained, bursts of 60, for each payer and payee. A
 * buyer or seller busier than that on a public facilitator is an operator's to let through.
 */
export const DEFAULT_RATE_PER_PAYER = 60;

/** Addresses tracked at once; past it the least recently used go (a forgotten one comes back full). */
const MAX_TRACKED = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

export type Taken =
  | { readonly ok: true; readonly release: () => void }
  | { readonly ok: false; readonly failure: Failure };

/** EVM addresses in lower case; Solana's (base58) as written. */
const normal = (address: string) =>
  /^0x[0-9a-fA-F]*$/.test(address) ? address.toLowerCase() : address;

export class SettlementRate {
  readonly perMinute: number;
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;
  readonly #max: number;

  constructor(perMinute: number, options: { now?: () => number; maxTracked?: number } = {}) {
    this.perMinute = perMinute;
    this.#now = options.now ?? (() => performance.now());
    this.#max = options.maxTracked ?? MAX_TRACKED;
  }

  /** Why a settlement naming these parties waits now, if one of them has none left; takes nothing. */
  refusal(parties: Parties): Failure | undefined {
    const now = this.#now();
    for (const [role, address] of named(parties)) {
      const tokens = this.#tokens(address, now);
      if (tokens < 1) return this.#refuse(role, address, tokens);
    }
    return undefined;
  }

  /**
   * One settlement from every party's allowance, or who waits (then nothing is taken). `release`
   * gives it back: the settle sent nothing.
   */
  take(parties: Parties): Taken {
    const refused = this.refusal(parties);
    if (refused) return { ok: false, failure: refused };
    const now = this.#now();
    const addresses = [...new Set(named(parties).map(([, address]) => address))];
    for (const address of addresses) this.#set(address, this.#tokens(address, now) - 1, now);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const at = this.#now();
      for (const address of addresses) {
        this.#set(address, Math.min(this.perMinute, this.#tokens(address, at) + 1), at);
      }
    };
    return { ok: true, release };
  }

  #tokens(address: string, now: number): number {
    const held = this.#buckets.get(address);
    if (!held) return this.perMinute;
    return Math.min(this.perMinute, held.tokens + ((now - held.at) * this.perMinute) / 60_000);
  }

  #set(address: string, tokens: number, now: number): void {
    // Most recently used last: the first in the map is the one to forget.
    this.#buckets.delete(address);
    this.#buckets.set(address, { tokens, at: now });
    if (this.#buckets.size > this.#max) {
      const oldest = this.#buckets.keys().next();
      if (!oldest.done) this.#buckets.delete(oldest.value);
    }
  }

  #refuse(role: string, address: string, tokens: number): Failure {
    const seconds = Math.max(1, Math.ceil(((1 - tokens) * 60) / this.perMinute));
    return failure(
      "payer_throttled",
      `the ${role} ${address} is over this facilitator's rate of ${this.perMinute} settlements a minute per payer and per payee; retry in ${seconds} s`,
      { retryAfterSeconds: seconds },
    );
  }
}

function named(parties: Parties): [role: string, address: string][] {
  return [
    ...parties.payers.map((a): [string, string] => ["payer", normal(a)]),
    ...parties.payees.map((a): [string, string] => ["payee", normal(a)]),
  ].filter(([, a]) => a !== "");
}
