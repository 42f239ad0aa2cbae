/**
 * What payers have in flight with us on Solana. A settle is only sent if the payer's token
 * account covers it once everything it already has in flight with us has landed: otherwise one
 * payer could sign many payments of its whole balance, have each simulate on its own, and make our
 * fee payer pay for every one that then fails on chain.
 *
 * As on EVM (inflight.ts), the check cannot race: after the one await for the chain's answer,
 * checking and reserving are synchronous. It reads nothing when the settle's own simulation proves
 * the payment (nothing else in flight on that account and nothing landed since the simulation
 * started). Otherwise it reads the account's balance and the statuses of the transactions in
 * flight at one slot: those that landed by that slot show in the balance, the others are counted.
 * A landed hold is kept a minute with its slot, so a read at an older slot still counts it.
 */
import type { Client } from "viem";
import { balanceShortfall } from "../../core/ledger-reads.js";
import type { HeldElsewhere, JournalEntry, SettlementStore } from "../../core/store.js";
import type { Failure } from "../../protocol/errors.js";
import { signatureStatuses, tokenBalance } from "../exact/rpc.js";

/** The journal's key prefix for Solana settlements: `svm:<network>:<signature>`. */
export const SVM_KEY_PREFIX = "svm:";

/** What a settlement takes from a payer's token account when it lands. */
export interface SvmSpend {
  readonly network: string;
  readonly mint: string;
  /** The payer's token account the transfer debits. */
  readonly source: string;
  readonly amount: bigint;
}

interface Hold {
  readonly slot: string;
  readonly amount: bigint;
  /** The transaction's signature (its id on chain); empty for one not sent yet. */
  readonly signature: string;
  /** The slot it landed in, once seen confirmed. */
  landedIn?: bigint | undefined;
  /** When it was reserved, then when it landed (unix milliseconds). */
  at: number;
}

/** Landed holds are forgotten after this long: any balance read since shows them. */
const LANDED_KEPT_MS = 60_000;
/** A hold whose transaction was never seen landing is let go after this long. */
const HOLD_MAX_AGE_MS = 30 * 60_000;

/** The ledger's name for what a spend debits. Base58 is case-sensitive: kept as it is. */
export function svmSlotOf(spend: Omit<SvmSpend, "amount">): string {
  return `${spend.network}:${spend.mint}:${spend.source}`;
}

export class SvmInFlight {
  readonly #holds = new Map<string, Hold>();
  readonly #keysBySlot = new Map<string, Set<string>>();
  /** Per slot, the tick of its last landing, and when (unix milliseconds). */
  readonly #landedAt = new Map<string, { readonly tick: number; readonly at: number }>();
  #sweptAt = Date.now();
  #tick = 0;
  readonly #onFree: ((key: string, landedIn?: bigint) => void) | undefined;

  constructor(options: { onFree?: ((key: string, landedIn?: bigint) => void) | undefined } = {}) {
    this.#onFree = options.onFree;
  }

  /** Taken before the settle's simulation: a landing after it makes the simulation stale. */
  mark(): number {
    return this.#tick;
  }

  /** How many holds are kept, landed or not (for tests). */
  get size(): number {
    return this.#holds.size;
  }

  /** How many settlements hold a reservation that has not landed (for tests). */
  get pending(): number {
    return [...this.#holds.values()].filter((h) => h.landedIn === undefined).length;
  }

  /** A journaled settlement a previous process left unsettled (at start-up). */
  seed(key: string, spend: SvmSpend, signature: string): void {
    this.#add(key, svmSlotOf(spend), spend.amount, signature);
  }

  /**
   * Reserves `spend` for settlement `key` (whose transaction is `signature`), or says why the
   * payer cannot cover it. `mark` is what mark() said before the settle's simulation started.
   */
  async reserve(
    client: Client,
    store: SettlementStore,
    key: string,
    spend: SvmSpend,
    signature: string,
    mark: number,
  ): Promise<Failure | undefined> {
    this.#drop(key);
    const slot = svmSlotOf(spend);
    this.#prune(slot);
    if (Date.now() - this.#sweptAt > LANDED_KEPT_MS) this.#sweep();
    const unlanded = [...this.#on(slot)].some((h) => h.landedIn === undefined);
    if (!unlanded && (this.#landedAt.get(slot)?.tick ?? -1) <= mark) {
      this.#add(key, slot, spend.amount, signature);
      return this.#withOtherReplicas(client, store, key, spend, slot);
    }
    const read = await this.#read(client, spend.source, [...this.#on(slot)]);
    // Synchronous from here on: no other reservation can slip in between check and add.
    const held = this.#unseen([...this.#on(slot)], read);
    if (held + spend.amount > read.amount) return shortfall(spend, read.amount, held);
    this.#add(key, slot, spend.amount, signature);
    return this.#withOtherReplicas(client, store, key, spend, slot);
  }

  /** The settlement's transaction was confirmed in `slotNumber`: balances from then on show it. */
  landed(key: string, slotNumber: bigint): void {
    const hold = this.#holds.get(key);
    if (!hold || hold.landedIn !== undefined) return;
    hold.landedIn = slotNumber;
    hold.at = Date.now();
    this.#landedAt.set(hold.slot, { tick: ++this.#tick, at: hold.at });
    this.#onFree?.(key, slotNumber);
  }

  /** The settlement sent nothing, or its transaction failed or expired: it takes nothing. */
  release(key: string): void {
    const hold = this.#holds.get(key);
    if (!hold) return;
    this.#drop(key);
    if (hold.landedIn === undefined) this.#onFree?.(key);
  }

  #on(slot: string): Hold[] {
    const keys = this.#keysBySlot.get(slot) ?? new Set<string>();
    return [...keys].map((k) => this.#holds.get(k)).filter((h): h is Hold => h !== undefined);
  }

  /** Holds that a balance read does not show: not landed by its slot (by status or as known). */
  #unseen(holds: readonly Hold[], read: BalanceRead): bigint {
    let sum = 0n;
    for (const hold of holds) {
      const landedIn = hold.landedIn ?? read.landedBy.get(hold.signature);
      if (landedIn !== undefined && landedIn <= read.slot) continue;
      sum += hold.amount;
    }
    return sum;
  }

  /** The account's balance and, at that slot, which of `holds` have landed (or failed). */
  async #read(client: Client, source: string, holds: readonly Hold[]): Promise<BalanceRead> {
    // A hold of another replica that has sent nothing yet has no signature: it counts.
    const unknown = holds
      .filter((h) => h.landedIn === undefined && h.signature !== "")
      .map((h) => h.signature);
    const [balance, statuses] = await Promise.all([
      tokenBalance(client, source),
      signatureStatuses(client, unknown),
    ]);
    const landedBy = new Map<string, bigint>();
    for (const [i, status] of statuses.entries()) {
      // A failed transaction took nothing: as good as landed for what the balance shows.
      if (status) landedBy.set(unknown[i] as string, status.slot);
    }
    // Statuses are read after the balance: a landing in a later slot is still counted.
    return { amount: balance.amount, slot: balance.slot, landedBy };
  }

  /**
   * With a store shared by replicas, what the others hold for this account counts too, decided
   * while the store holds the account locked for every replica. Nothing is reserved if it falls
   * short.
   */
  async #withOtherReplicas(
    client: Client,
    store: SettlementStore,
    key: string,
    spend: SvmSpend,
    slot: string,
  ): Promise<Failure | undefined> {
    if (!store.reserveShared) return undefined;
    const decide = async (held: readonly HeldElsewhere[]) => {
      const others = held.filter((h) => !this.#holds.has(h.key) && h.slot === slot);
      if (others.length === 0) return undefined;
      const theirs: Hold[] = others.map((h) => ({
        slot,
        amount: h.amount,
        signature: h.hashes.at(-1) ?? "",
        landedIn: h.landedIn,
        at: Date.now(),
      }));
      const ours = this.#on(slot).filter((h) => h !== this.#holds.get(key));
      const all = [...theirs, ...ours];
      const read = await this.#read(client, spend.source, all);
      const unseen = this.#unseen(all, read);
      return unseen + spend.amount > read.amount
        ? shortfall(spend, read.amount, unseen)
        : undefined;
    };
    let refusal: Failure | undefined;
    try {
      refusal = await store.reserveShared(key, [{ slot, amount: spend.amount }], decide);
    } catch (error) {
      this.release(key);
      throw error;
    }
    if (refusal) this.release(key);
    return refusal;
  }

  #add(key: string, slot: string, amount: bigint, signature: string): void {
    this.#holds.set(key, { slot, amount, signature, at: Date.now() });
    let keys = this.#keysBySlot.get(slot);
    if (!keys) {
      keys = new Set();
      this.#keysBySlot.set(slot, keys);
    }
    keys.add(key);
  }

  #drop(key: string): boolean {
    const hold = this.#holds.get(key);
    if (!hold) return false;
    this.#holds.delete(key);
    const keys = this.#keysBySlot.get(hold.slot);
    keys?.delete(key);
    if (keys?.size === 0) this.#keysBySlot.delete(hold.slot);
    return true;
  }

  /**
   * Every slot pruned, and landings forgotten once no settle can still be deciding on a
   * simulation made before them: a long-running server keeps only what is recent.
   */
  #sweep(): void {
    const now = Date.now();
    this.#sweptAt = now;
    for (const slot of [...this.#keysBySlot.keys()]) this.#prune(slot);
    for (const [slot, landed] of this.#landedAt) {
      if (now - landed.at > LANDED_KEPT_MS) this.#landedAt.delete(slot);
    }
  }

  /** Lets go of landed holds every read now shows, and of holds too old to matter. */
  #prune(slot: string): void {
    const now = Date.now();
    for (const key of this.#keysBySlot.get(slot) ?? []) {
      const hold = this.#holds.get(key) as Hold;
      const age = now - hold.at;
      if (hold.landedIn !== undefined ? age > LANDED_KEPT_MS : age > HOLD_MAX_AGE_MS) {
        this.release(key);
      }
    }
  }
}

interface BalanceRead {
  readonly amount: bigint;
  readonly slot: bigint;
  /** Signatures of holds found landed (or failed), with their slot. */
  readonly landedBy: ReadonlyMap<string, bigint>;
}

function shortfall(spend: SvmSpend, have: bigint, held: bigint): Failure {
  return balanceShortfall(`the payer's token account ${spend.source}`, have, held, spend.amount);
}

/** A Solana journal entry's spend and transaction, to count it against its payer after a restart. */
export function svmSpendOf(
  entry: JournalEntry,
): { readonly spend: SvmSpend; readonly signature: string } | undefined {
  if (!entry.key.startsWith(SVM_KEY_PREFIX) || !entry.expect) return undefined;
  const network = entry.key.slice(SVM_KEY_PREFIX.length).split(":").slice(0, 2).join(":");
  const { token, from, value } = entry.expect;
  const signature = entry.hashes.at(-1);
  if (!signature) return undefined;
  return { spend: { network, mint: token, source: from, amount: BigInt(value) }, signature };
}
