/**
 * What payers have in flight with us. A settle is only broadcast if the payer's balance (and,
 * for a spend through an allowance, that allowance) covers it once everything it already has in
 * flight with us has landed. Without this, one payer could sign many payments of its whole
 * balance, have each verify on its own, and make us pay gas for every one that then reverts.
 *
 * The check cannot race: reserving is synchronous. It costs no chain read when a settle's own
 * simulation proves it (the payer has nothing else in flight with us and nothing landed since
 * the simulation started), or when a balance read of the last few seconds, less what is in
 * flight and what landed in blocks that read did not see, covers it. Otherwise it reads the
 * balance at one block, noting which reservations that block already includes.
 */
import type { Address } from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import type { ChainAccess } from "./access.js";
import { decideWithOthers } from "./shared-inflight.js";
import { minedIn, readAvailable, shortfall } from "./spend-reads.js";

/** What a settlement takes from an account when it lands. */
export interface Spend {
  readonly token: Address;
  readonly owner: Address;
  readonly amount: bigint;
  /** For a spend through an allowance (Permit2): the spender it was granted to. */
  readonly spender?: Address | undefined;
}

interface Landing {
  readonly tick: number;
  readonly block: bigint;
  readonly amount: bigint;
}

interface Reservation {
  readonly chainId: number;
  readonly spends: readonly Spend[];
  readonly at: number;
}

/** A reservation whose transaction was never seen landing is let go after this long. */
const RESERVATION_MAX_AGE_MS = 30 * 60_000;

/**
 * A balance read is reused this long to accept settles (never to refuse one). The balance can
 * only have dropped since by what landed through us, which is counted, or by the payer moving
 * funds itself, which the payer throttle answers.
 */
const READ_REUSE_MS = 5_000;
/** Slots whose landings are remembered (the most recently landed ones). */
const SLOTS_KEPT = 20_000;
/** Landings remembered per slot: far more than can land during one balance read. */
const LANDINGS_PER_SLOT = 256;

export function slotOf(chainId: number, spend: Spend): string {
  const base = `${chainId}:${spend.token}:${spend.owner}`;
  return (spend.spender ? `${base}>${spend.spender}` : base).toLowerCase();
}

export class InFlight {
  /**
   * Told when a reservation ends, with the block its transaction landed in (undefined: it spent
   * nothing): a shared store updates its copy.
   */
  readonly #onFree: ((key: string, landedIn?: bigint) => void) | undefined;

  constructor(options: { onFree?: ((key: string, landedIn?: bigint) => void) | undefined } = {}) {
    this.#onFree = options.onFree;
  }

  /** Recent balance reads made while other replicas held something on a slot (shared stores). */
  readonly sharedReads = new Map<string, { available: bigint; block: bigint; at: number }>();

  readonly #reservations = new Map<string, Reservation>();
  readonly #keysBySlot = new Map<string, Set<string>>();
  /**
   * Per slot, its recent landings in the order they were seen, each with the tick it was seen
   * at (the fast path asks whether anything landed since its mark) and the block it landed in
   * (the slow path counts what landed during its read in a block its read did not see).
   */
  readonly #landings = new Map<string, { list: Landing[]; droppedUpTo: number }>();
  /** Per slot, its last balance (or allowance) read: at which block, and the tick before it. */
  readonly #reads = new Map<
    string,
    { since: number; block: bigint; available: bigint; at: number }
  >();
  /** Bumped at every landing. */
  #tick = 0;
  #forgottenUpTo = -1;

  /** Taken before the chain reads a settle relies on: a landing after it makes them stale. */
  mark(): number {
    return this.#tick;
  }

  /** How many settlements hold a reservation (for tests and metrics). */
  get size(): number {
    return this.#reservations.size;
  }

  /**
   * Reserves `spends` for settlement `key`, or says why the payer cannot cover them. `mark` is
   * what mark() said before this settle's simulation started.
   */
  async reserve(
    ctx: ChainAccess,
    key: string,
    spends: readonly Spend[],
    mark: number,
  ): Promise<Failure | undefined> {
    // A shared store replaces its copy when this reservation is made again.
    this.#drop(key);
    const slots = spends.map((spend) => slotOf(ctx.chainId, spend));
    const covered = () =>
      spends.every((spend, i) => this.#covered(slots[i] as string, key, spend.amount, mark));
    if (covered()) {
      this.#add(ctx.chainId, key, spends);
      return this.#withOtherReplicas(ctx, key, spends, slots);
    }
    await this.#read(ctx, spends, slots);
    // Synchronous from here on: no other reservation can slip in between check and add.
    if (covered()) {
      this.#add(ctx.chainId, key, spends);
      return this.#withOtherReplicas(ctx, key, spends, slots);
    }
    const i = spends.findIndex(
      (spend, j) => !this.#covered(slots[j] as string, key, spend.amount, mark),
    );
    const view = this.#view(slots[i] as string, key);
    if (!view) {
      return failure(
        "insufficient_funds",
        "the payer's balance moved too fast under its other settlements to be read; retry",
      );
    }
    return shortfall(spends[i] as Spend, view.available, view.held);
  }

  /**
   * Whether `amount` more on `slot` is covered: nothing else is in flight there and nothing
   * landed since the settle's own simulation (which then proved it); or the last read of the
   * balance, less what is in flight and what landed in blocks that read did not see, covers it.
   */
  #covered(slot: string, key: string, amount: bigint, mark: number): boolean {
    if (!this.#keysBySlot.get(slot)?.size && this.#landedSince(slot) <= mark) return true;
    const view = this.#view(slot, key);
    return view !== undefined && view.held + amount <= view.available;
  }

  /** The slot's recent read, and what it does not show yet: in flight, and landed since. */
  #view(slot: string, key: string): { available: bigint; held: bigint } | undefined {
    const read = this.#reads.get(slot);
    if (!read || Date.now() - read.at > READ_REUSE_MS) return undefined;
    const unseen = this.#landedUnseen(slot, read.since, read.block);
    if (unseen === undefined) return undefined;
    return { available: read.available, held: this.#held(slot, key) + unseen };
  }

  /**
   * With a store shared by replicas, what the others hold on these slots counts too: the store
   * locks the slots for every replica while the balance is weighed against both. Nothing is
   * reserved (here or there) if the payer cannot cover it all.
   */
  async #withOtherReplicas(
    ctx: ChainAccess,
    key: string,
    spends: readonly Spend[],
    slots: readonly string[],
  ): Promise<Failure | undefined> {
    const store = ctx.journal;
    if (!store.reserveShared) return undefined;
    let refusal: Failure | undefined;
    try {
      refusal = await store.reserveShared(
        key,
        spends.map((spend, i) => ({ slot: slots[i] as string, amount: spend.amount })),
        (held) => decideWithOthers(ctx, this, key, spends, slots, held),
      );
    } catch (error) {
      this.release(key);
      throw error;
    }
    if (refusal) this.release(key);
    return refusal;
  }

  /** Whether settlement `key` holds a reservation here. */
  holds(key: string): boolean {
    return this.#reservations.has(key);
  }

  /** The settlements of this process holding something on `slot`, but `except`, and how much. */
  heldOn(slot: string, except: string): { key: string; amount: bigint }[] {
    const held: { key: string; amount: bigint }[] = [];
    for (const key of this.#keysBySlot.get(slot) ?? []) {
      if (key === except) continue;
      const reservation = this.#reservations.get(key);
      let amount = 0n;
      for (const spend of reservation?.spends ?? []) {
        if (slotOf(reservation?.chainId ?? 0, spend) === slot) amount += spend.amount;
      }
      held.push({ key, amount });
    }
    return held;
  }

  /** Records what a journaled, unsettled transaction will take (at start-up). */
  seed(chainId: number, key: string, spends: readonly Spend[]): void {
    this.#add(chainId, key, spends);
  }

  /**
   * The settlement's transaction was mined in `block`: balances read at that block or later show
   * it. `spent` is false for a revert, which took nothing.
   */
  landed(key: string, block: bigint, spent = true): void {
    const reservation = this.#reservations.get(key);
    if (!reservation) return;
    this.#tick++;
    for (const spend of reservation.spends) {
      const slot = slotOf(reservation.chainId, spend);
      // A revert hints that the payer moved funds itself: read its balance afresh next time.
      if (!spent) this.#reads.delete(slot);
      const landings = this.#landings.get(slot) ?? { list: [], droppedUpTo: -1 };
      landings.list.push({ tick: this.#tick, block, amount: spent ? spend.amount : 0n });
      if (landings.list.length > LANDINGS_PER_SLOT) {
        const dropped = landings.list.splice(0, LANDINGS_PER_SLOT / 2);
        landings.droppedUpTo = dropped.at(-1)?.tick ?? landings.droppedUpTo;
      }
      // Most recently landed last, so the oldest slots are forgotten first.
      this.#landings.delete(slot);
      this.#landings.set(slot, landings);
    }
    for (const [slot, landings] of this.#landings) {
      if (this.#landings.size <= SLOTS_KEPT) break;
      this.#landings.delete(slot);
      this.#forgottenUpTo = landings.list.at(-1)?.tick ?? this.#forgottenUpTo;
    }
    this.release(key, spent ? block : undefined);
  }

  /**
   * Nothing was broadcast for `key` (or it can no longer land): free its reservation. (`landedIn`
   * is for landed() only.)
   */
  release(key: string, landedIn?: bigint): void {
    if (this.#drop(key)) this.#onFree?.(key, landedIn);
  }

  /** Forgets the reservation here; false if there was none. */
  #drop(key: string): boolean {
    const reservation = this.#reservations.get(key);
    if (!reservation) return false;
    this.#reservations.delete(key);
    for (const spend of reservation.spends) {
      const slot = slotOf(reservation.chainId, spend);
      const keys = this.#keysBySlot.get(slot);
      keys?.delete(key);
      if (keys?.size === 0) this.#keysBySlot.delete(slot);
    }
    return true;
  }

  /** The tick of the slot's last landing, as far as it is still known. */
  #landedSince(slot: string): number {
    return this.#landings.get(slot)?.list.at(-1)?.tick ?? this.#forgottenUpTo;
  }

  /**
   * What landed on `slot` after tick `since` in a block after `block`: a balance read at `block`
   * does not show it. Undefined if those landings are no longer all remembered.
   */
  #landedUnseen(slot: string, since: number, block: bigint): bigint | undefined {
    const landings = this.#landings.get(slot);
    const droppedUpTo = landings?.droppedUpTo ?? this.#forgottenUpTo;
    if (droppedUpTo > since) return undefined;
    const list = landings?.list ?? [];
    let sum = 0n;
    for (let i = list.length - 1; i >= 0; i--) {
      const landing = list[i] as Landing;
      if (landing.tick <= since) break;
      if (landing.block > block) sum += landing.amount;
    }
    return sum;
  }

  #add(chainId: number, key: string, spends: readonly Spend[]): void {
    this.#reservations.set(key, { chainId, spends, at: Date.now() });
    for (const spend of spends) {
      const slot = slotOf(chainId, spend);
      let keys = this.#keysBySlot.get(slot);
      if (!keys) {
        keys = new Set();
        this.#keysBySlot.set(slot, keys);
      }
      keys.add(key);
    }
  }

  /** What other settlements hold on `slot`. */
  #held(slot: string, except: string): bigint {
    return this.heldOn(slot, except).reduce((sum, h) => sum + h.amount, 0n);
  }

  /**
   * Reads each spend's balance or allowance at one block, and lets go of the reservations that
   * block already includes (mined, reverted or not) or that are too old to matter.
   */
  async #read(ctx: ChainAccess, spends: readonly Spend[], slots: readonly string[]) {
    const { client } = ctx;
    // Landings seen before the block number is read are in that block or an earlier one; those
    // seen later are counted unless their block was read.
    const since = this.#tick;
    const blockNumber = await client.getBlockNumber({ cacheTime: 0 });
    const others = new Set<string>();
    for (const slot of slots) for (const key of this.#keysBySlot.get(slot) ?? []) others.add(key);
    const [amounts, included] = await Promise.all([
      Promise.all(spends.map((spend) => readAvailable(ctx, spend, blockNumber))),
      Promise.all(
        [...others].map(async (key) => {
          const block = await minedIn(ctx, (await ctx.journal.get(key))?.hashes ?? []);
          return { key, block: block !== undefined && block <= blockNumber ? block : undefined };
        }),
      ),
    ]);
    for (const { key, block } of included) if (block !== undefined) this.landed(key, block);
    const now = Date.now();
    for (const key of others) {
      const reservation = this.#reservations.get(key);
      if (reservation && now - reservation.at > RESERVATION_MAX_AGE_MS) this.release(key);
    }
    for (const [i, slot] of slots.entries()) {
      const last = this.#reads.get(slot);
      if (last && last.block > blockNumber) continue;
      this.#reads.delete(slot);
      this.#reads.set(slot, {
        since,
        block: blockNumber,
        available: amounts[i] as bigint,
        at: now,
      });
    }
    for (const slot of this.#reads.keys()) {
      if (this.#reads.size <= SLOTS_KEPT) break;
      this.#reads.delete(slot);
    }
  }
}
