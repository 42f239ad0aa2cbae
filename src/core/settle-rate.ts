/** Settlements a minute per payer, payee ten times (`--rate-per-payer`), per process: a landed
 * settlement costs gas as a revert does. A bucket of N refilled at N a minute. */

import type { Parties } from "../deny-list/deny-list.js";
import { type Failure, failure } from "../protocol/errors.js";
import { addressKey } from "../protocol/transaction-hash.js";
import { BudgetMap, objectBytes, stringBytes } from "./byte-budget.js";

/** The CLI's default: one a second sustained, bursts of 60, per payer (ten times per payee). */
export const DEFAULT_RATE_PER_PAYER = 60;

/** How many times a payer's rate a payee may be paid at. */
export const PAYEE_FACTOR = 10;

/** Addresses tracked at once; past it the least recently used go (and come back full). */
const MAX_TRACKED = 100_000;
/** And bytes: about 200 an address, so about 42,000 addresses in 8 MiB. */
export const RATE_BUDGET_BYTES = 8 * 2 ** 20;

/** A bucket of N tokens refilled at N a minute, as it held `tokens` at `at` (milliseconds). */
export interface Bucket {
  tokens: number;
  at: number;
}

/** What `held` holds at `now` in a bucket of `size` refilled at `size` a minute; unseen is full. */
export const tokensAt = (held: Bucket | undefined, size: number, now: number) =>
  held ? Math.min(size, held.tokens + (now - held.at) * (size / 60_000)) : size;

/** Whole seconds, at least one, until a bucket of `size` a minute holding `tokens` holds one. */
export const secondsToOne = (tokens: number, size: number) =>
  Math.max(1, Math.ceil((1 - tokens) / (size / 60_000) / 1000));

export type Taken =
  | { readonly ok: true; readonly release: () => void }
  | { readonly ok: false; readonly failure: Failure };

export class SettlementRate {
  readonly perMinute: number;
  /** Most recently used last: the first in the map is the one to forget. */
  readonly #buckets: BudgetMap<string, Bucket>;
  readonly #now: () => number;

  constructor(perMinute: number, options: { now?: () => number; maxTracked?: number } = {}) {
    this.perMinute = perMinute;
    this.#now = options.now ?? (() => performance.now());
    const sizeOf = (id: string) => stringBytes(id) + objectBytes(2);
    const maxEntries = options.maxTracked ?? MAX_TRACKED;
    this.#buckets = new BudgetMap(RATE_BUDGET_BYTES, sizeOf, { maxEntries });
  }

  /** Why a settlement naming these parties waits now, if one of them has none left; takes nothing. */
  refusal(parties: Parties): Failure | undefined {
    const now = this.#now();
    for (const [role, address] of named(parties)) {
      const tokens = this.#tokens(role, address, now);
      if (tokens < 1) return this.#refuse(role, address, tokens);
    }
    return undefined;
  }

  /** One settlement from every party's allowance, or who waits; `release` gives it back. */
  take(parties: Parties): Taken {
    const refused = this.refusal(parties);
    if (refused) return { ok: false, failure: refused };
    const now = this.#now();
    // Each bucket once, though a party be named twice.
    const buckets = [...new Map(named(parties).map((n) => [n.join(":"), n])).values()];
    for (const [role, address] of buckets) {
      this.#set(role, address, this.#tokens(role, address, now) - 1, now);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const at = this.#now();
      for (const [role, address] of buckets) {
        const tokens = Math.min(this.#size(role), this.#tokens(role, address, at) + 1);
        this.#set(role, address, tokens, at);
      }
    };
    return { ok: true, release };
  }

  /** A bucket's size, which is also what it refills a minute. */
  #size(role: Role): number {
    return role === "payee" ? this.perMinute * PAYEE_FACTOR : this.perMinute;
  }

  #tokens(role: Role, address: string, now: number): number {
    return tokensAt(this.#buckets.get(`${role}:${address}`), this.#size(role), now);
  }

  #set(role: Role, address: string, tokens: number, now: number): void {
    this.#buckets.set(`${role}:${address}`, { tokens, at: now });
  }

  #refuse(role: Role, address: string, tokens: number): Failure {
    const size = this.#size(role);
    const seconds = secondsToOne(tokens, size);
    return failure(
      "payer_throttled",
      `the ${role} ${address} is over this facilitator's rate of ${size} settlements a minute per ${role}; retry in ${seconds} s`,
      { retryAfterSeconds: seconds },
    );
  }
}

type Role = "payer" | "payee";

function named(parties: Parties): [role: Role, address: string][] {
  return [
    ...parties.payers.map((a): [Role, string] => ["payer", addressKey(a)]),
    ...parties.payees.map((a): [Role, string] => ["payee", addressKey(a)]),
  ].filter(([, a]) => a !== "");
}
