/** A settle goes out only if its source covers it once all the payer's in-flight ones land (else
 * we pay gas for each that fails); check and reserve are synchronous after one read (no race). */
import { type Failure, failure } from "../protocol/errors.js";
import {
  decideShared,
  type HeldSpend,
  type HoldToCheck,
  type LedgerReads,
  type LocalHold,
  type LocalHolds,
  READ_REUSE_MS,
  type SharedRead,
} from "./ledger-reads.js";

/** A reservation: what it holds on each slot, and since when. */
interface Hold {
  readonly parts: readonly HeldSpend[];
  /** Its transactions, when the family gave them (else it finds them in its journal). */
  readonly transactions: readonly string[] | undefined;
  /** When it was reserved, or landed (unix milliseconds). */
  readonly at: number;
}

interface Landed extends Hold {
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
function amountOn(slot: string, hold: Hold | undefined): bigint {
  let sum = 0n;
  for (const part of hold?.parts ?? []) if (part.slot === slot) sum += part.amount;
  return sum;
}

/** Landed holds, oldest first (a Map's front leaves holes to walk); forgotten ones skipped. */
class LandingQueue {
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

/** A hold whose transaction was never seen landing is let go after this long. */
const HOLD_MAX_AGE_MS = 30 * 60_000;
/** Landed holds are forgotten after this long: any read since shows them. */
const LANDED_KEPT_MS = 60_000;
/** At most this many landed holds are kept (the most recent). */
const LANDED_KEPT = 20_000;
/** How often old holds are looked for. */
const PRUNE_EVERY_MS = 1_000;

/** A read of one slot; `unseen`: what landed here at a later point, which it does not show. */
interface Read extends SharedRead {
  unseen: bigint;
}

interface Slot {
  readonly pending: Set<string>;
  readonly landed: Set<Landed>;
  /** The tick of the last landing here, as far as it is known. */
  lastLanding: number;
  /** The tick of the last landing here that was forgotten. */
  forgotten: number;
  read?: Read | undefined;
  shared?: SharedRead | undefined;
}

export class InFlightLedger {
  /** Told when a hold ends, with where it landed (undefined: it spent nothing). */
  readonly #onFree: ((key: string, landedIn?: bigint) => void) | undefined;
  /** Holds not landed yet, in the order they were made. */
  readonly #pending = new Map<string, Hold>();
  readonly #landed = new Map<string, Landed>();
  /** The same, in the order they landed. */
  readonly #landings = new LandingQueue();
  readonly #slots = new Map<string, Slot>();
  /** Bumped at every landing. */
  #tick = 0;
  /** The tick of the last landing forgotten on a slot no longer kept. */
  #forgottenUpTo = -1;
  #pruneAt = 0;
  readonly #local: LocalHolds;

  constructor(options: { onFree?: ((key: string, landedIn?: bigint) => void) | undefined } = {}) {
    this.#onFree = options.onFree;
    this.#local = {
      knows: (key) => this.#pending.has(key) || this.#landed.has(key),
      on: (slot, except) => this.#on(slot, except),
      sharedRead: (slot) => this.#slots.get(slot)?.shared,
      keepSharedRead: (slot, read) => {
        const kept = this.#slots.get(slot);
        if (kept) kept.shared = read;
      },
    };
  }

  /** Taken before the chain reads a settle relies on: a landing after it makes them stale. */
  mark(): number {
    return this.#tick;
  }

  /** Holds kept, landed or not (for tests). */
  get size(): number {
    return this.#pending.size + this.#landed.size;
  }

  /** Holds not landed (for tests). */
  get pending(): number {
    return this.#pending.size;
  }

  /** A journaled settlement a previous process left unsettled (at start-up), or one re-checked. */
  seed(key: string, parts: readonly HeldSpend[], transactions?: readonly string[]): void {
    this.#drop(key);
    this.#add(key, parts, transactions, Date.now());
  }

  /** Reserves `spends` for `key`, or says why not; `mark` is mark() before its simulation. */
  async reserve<S extends { readonly amount: bigint }>(
    reads: LedgerReads<S>,
    key: string,
    spends: readonly S[],
    mark: number,
    transactions?: readonly string[],
  ): Promise<Failure | undefined> {
    // A shared store replaces its copy when this reservation is made again.
    this.#drop(key);
    const now = Date.now();
    if (now >= this.#pruneAt) this.#prune(now);
    const parts = spends.map((spend) => ({ slot: reads.slotOf(spend), amount: spend.amount }));
    let at = now;
    if (!parts.every((part) => this.#covered(part, key, mark))) {
      await this.#read(reads, spends, parts);
      // Synchronous from here on: no other reservation can slip in between check and add.
      const i = parts.findIndex((part) => !this.#covered(part, key, mark));
      if (i >= 0) {
        const refusal = this.#refusal(reads, spends[i] as S, parts[i] as HeldSpend, key);
        for (const part of parts) this.#tidy(part.slot);
        return refusal;
      }
      at = Date.now();
    }
    this.#add(key, parts, transactions, at);
    if (!reads.store.reserveShared) return undefined;
    return this.#withOtherReplicas(reads, key, spends, parts);
  }

  /** `key`'s transaction landed at `point` (`spent` false: a revert, which took nothing). */
  landed(key: string, point: bigint, spent = true): void {
    const hold = this.#pending.get(key);
    if (!hold) return;
    this.#pending.delete(key);
    const tick = ++this.#tick;
    // Landed again (a reorg dropped the first landing): the first no longer shows anywhere.
    const before = this.#landed.get(key);
    if (before) this.#forget(before);
    const { parts, transactions } = hold;
    const at = Date.now();
    const landing = { key, parts, transactions, at, point, tick, spent, forgotten: false };
    this.#landed.set(key, landing);
    this.#landings.push(landing);
    for (const part of parts) {
      const slot = this.#slot(part.slot);
      slot.pending.delete(key);
      slot.landed.add(landing);
      slot.lastLanding = tick;
      // A revert hints that the payer moved funds itself: read afresh next time.
      if (!spent) slot.read = undefined;
      else if (slot.read && point > slot.read.point) slot.read.unseen += part.amount;
    }
    while (this.#landed.size > LANDED_KEPT) this.#forget(this.#landings.oldest() as Landed);
    this.#onFree?.(key, spent ? point : undefined);
  }

  /** Nothing was sent for `key`, or it can no longer land: it takes nothing. */
  release(key: string): void {
    if (this.#drop(key)) this.#onFree?.(key);
  }

  /** Covered: the simulation proved it (nothing else in flight or landed since), or a recent read. */
  #covered(part: HeldSpend, key: string, mark: number): boolean {
    const slot = this.#slots.get(part.slot);
    if (!slot) return this.#forgottenUpTo <= mark;
    if (slot.pending.size === 0 && slot.lastLanding <= mark) return true;
    const view = this.#view(part.slot, slot, key);
    return view !== undefined && view.held + part.amount <= view.available;
  }

  /** The slot's recent read, and what it does not show yet: in flight, and landed after it. */
  #view(name: string, slot: Slot, key: string): { available: bigint; held: bigint } | undefined {
    const read = slot.read;
    if (!read || Date.now() - read.at > READ_REUSE_MS) return undefined;
    let held = read.unseen;
    for (const other of slot.pending) {
      if (other !== key) held += amountOn(name, this.#pending.get(other));
    }
    return { available: read.available, held };
  }

  #refusal<S extends { readonly amount: bigint }>(
    reads: LedgerReads<S>,
    spend: S,
    part: HeldSpend,
    key: string,
  ): Failure {
    const slot = this.#slots.get(part.slot);
    const view = slot && this.#view(part.slot, slot, key);
    if (!view) {
      return failure(
        "insufficient_funds",
        "the payer's balance moved too fast under its other settlements to be read; retry",
      );
    }
    return reads.shortfall(spend, view.available, view.held);
  }

  /** Reads each spend's source at one point, letting go of holds landed by then. */
  async #read<S extends { readonly amount: bigint }>(
    reads: LedgerReads<S>,
    spends: readonly S[],
    parts: readonly HeldSpend[],
  ): Promise<void> {
    // A landing forgotten after this tick may be one the read does not show: it is not kept.
    const since = this.#tick;
    const holds = new Map<string, HoldToCheck>();
    for (const part of parts) {
      for (const key of this.#slots.get(part.slot)?.pending ?? []) {
        holds.set(key, { key, transactions: this.#pending.get(key)?.transactions });
      }
    }
    const read = await reads.read(spends, [...holds.values()]);
    for (const [key, point] of read.landed) this.landed(key, point);
    const now = Date.now();
    for (const [i, part] of parts.entries()) {
      const slot = this.#slot(part.slot);
      if (slot.forgotten > since || (slot.read && slot.read.point > read.point)) continue;
      let unseen = 0n;
      for (const landing of slot.landed) {
        if (landing.spent && landing.point > read.point) unseen += amountOn(part.slot, landing);
      }
      slot.read = { point: read.point, available: read.available[i] as bigint, at: now, unseen };
    }
  }

  /** What other replicas hold counts too, the slots locked meanwhile; a shortfall reserves nothing. */
  async #withOtherReplicas<S extends { readonly amount: bigint }>(
    reads: LedgerReads<S>,
    key: string,
    spends: readonly S[],
    parts: readonly HeldSpend[],
  ): Promise<Failure | undefined> {
    const slots = parts.map((part) => part.slot);
    let refusal: Failure | undefined;
    try {
      refusal = await reads.store.reserveShared?.(key, parts, (held) =>
        decideShared(this.#local, reads, key, spends, slots, held),
      );
    } catch (error) {
      this.release(key);
      throw error;
    }
    if (refusal) this.release(key);
    return refusal;
  }

  /** This process's holds on `slot` but `except`, landed or not (a revert holds nothing). */
  #on(name: string, except: string): LocalHold[] {
    const slot = this.#slots.get(name);
    const holds: LocalHold[] = [];
    for (const key of slot?.pending ?? []) {
      if (key === except) continue;
      const hold = this.#pending.get(key);
      holds.push({ key, amount: amountOn(name, hold), transactions: hold?.transactions });
    }
    for (const landing of slot?.landed ?? []) {
      const { key, transactions, point } = landing;
      if (key === except || !landing.spent) continue;
      holds.push({ key, amount: amountOn(name, landing), transactions, landedIn: point });
    }
    return holds;
  }

  #add(
    key: string,
    parts: readonly HeldSpend[],
    transactions: readonly string[] | undefined,
    at: number,
  ) {
    this.#pending.set(key, { parts, transactions, at });
    for (const part of parts) this.#slot(part.slot).pending.add(key);
  }

  /** Forgets the hold not landed yet; false if there was none. */
  #drop(key: string): boolean {
    const hold = this.#pending.get(key);
    if (!hold) return false;
    this.#pending.delete(key);
    for (const part of hold.parts) {
      this.#slots.get(part.slot)?.pending.delete(key);
      this.#tidy(part.slot);
    }
    return true;
  }

  /** Forgets a landed hold: a read from before its landing can no longer be weighed. */
  #forget(landing: Landed): void {
    landing.forgotten = true;
    if (this.#landed.get(landing.key) === landing) this.#landed.delete(landing.key);
    for (const part of landing.parts) {
      const slot = this.#slots.get(part.slot);
      if (!slot) continue;
      slot.landed.delete(landing);
      slot.forgotten = Math.max(slot.forgotten, landing.tick);
      this.#tidy(part.slot);
    }
  }

  /** Lets go of holds too old to matter, and of landed holds every read now shows. */
  #prune(now: number): void {
    this.#pruneAt = now + PRUNE_EVERY_MS;
    for (const [key, hold] of this.#pending) {
      if (now - hold.at <= HOLD_MAX_AGE_MS) break;
      this.release(key);
    }
    for (let landing = this.#landings.oldest(); landing; landing = this.#landings.oldest()) {
      if (now - landing.at <= LANDED_KEPT_MS) break;
      this.#forget(landing);
    }
  }

  #slot(name: string): Slot {
    let slot = this.#slots.get(name);
    if (!slot) {
      // Whatever landed here before was forgotten by now.
      const known = this.#forgottenUpTo;
      slot = { pending: new Set(), landed: new Set(), lastLanding: known, forgotten: known };
      this.#slots.set(name, slot);
    }
    return slot;
  }

  /** A slot with nothing held on it is let go (its landings count as forgotten). */
  #tidy(name: string): void {
    const slot = this.#slots.get(name);
    if (!slot || slot.pending.size > 0 || slot.landed.size > 0) return;
    this.#slots.delete(name);
    this.#forgottenUpTo = Math.max(this.#forgottenUpTo, slot.lastLanding, slot.forgotten);
  }
}
