/** The ledger's holds and landings, oldest first in a queue (a Map's front leaves holes to walk). */
import type { HeldSpend } from "./ledger-reads.js";

/** A reservation: what it holds on each slot, and since when. */
export interface Hold {
  readonly parts: readonly HeldSpend[];
  /** Its transactions, when the family gave them (else it finds them in its journal). */
  readonly transactions: readonly string[] | undefined;
  /** When it was reserved, or landed (unix milliseconds). */
  readonly at: number;
}

export interface Landed extends Hold {
  readonly key: string;
  /** The block or slot it landed in. */
  readonly point: bigint;
  /** The ledger's count of landings when it landed. */
  readonly tick: number;
  /** False for a revert, which took nothing. */
  readonly spent: boolean;
  forgotten: boolean;
}

/** What `hold` takes from `slot`. */
export function amountOn(slot: string, hold: Hold | undefined): bigint {
  let sum = 0n;
  for (const part of hold?.parts ?? []) if (part.slot === slot) sum += part.amount;
  return sum;
}

/** Landed holds, oldest first; forgotten ones are skipped, and dropped from the front. */
export class LandingQueue {
  #list: Landed[] = [];
  #head = 0;

  push(landing: Landed): void {
    this.#list.push(landing);
  }

  /** The oldest landing not forgotten. */
  oldest(): Landed | undefined {
    while (this.#list[this.#head]?.forgotten) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#list.length) {
      this.#list = this.#list.slice(this.#head);
      this.#head = 0;
    }
    return this.#list[this.#head];
  }
}
