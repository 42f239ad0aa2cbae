/** What the ledger asks of a family (reads at one point), and the decision when replicas hold. */
import { type Failure, failure } from "../protocol/errors.js";
import type { HeldElsewhere, SettlementStore } from "./store.js";

/** What a settlement takes from one source when it lands; `slot` names the source. */
export interface HeldSpend {
  readonly slot: string;
  readonly amount: bigint;
}

/** A settlement in flight whose landing the family is asked about. */
export interface HoldToCheck {
  /** Its journal key. */
  readonly key: string;
  /** Its transactions (hashes, signatures); undefined: the family finds them in its journal. */
  readonly transactions?: readonly string[] | undefined;
}

/** What the sources held at one point of the chain, and which holds had landed by then. */
export interface PointRead {
  /** The last block or slot the read shows in full: landings are placed on the same line. */
  readonly point: bigint;
  /** What each spend's source held there, in the order of the spends. */
  readonly available: readonly bigint[];
  /** The holds asked about that landed (or can no longer spend) by `point`, with where. */
  readonly landed: ReadonlyMap<string, bigint>;
}

/** One family's reads, bound to the chain a settlement is on. */
export interface LedgerReads<S extends { readonly amount: bigint }> {
  /** Where the settlement is journaled: a store shared by replicas weighs their holds too. */
  readonly store: SettlementStore;
  /** Names what `spend` takes from: every hold on one slot is weighed against one amount. */
  slotOf(spend: S): string;
  /** What each spend can take at one point, and which of `holds` landed by then. */
  read(spends: readonly S[], holds: readonly HoldToCheck[]): Promise<PointRead>;
  /** The refusal when `spend`'s source has `have`, `held` of it already in flight with us. */
  shortfall(spend: S, have: bigint, held: bigint): Failure;
}

/** How a family says an amount of the spend's token ("0.5 USDC (500000 units)"); bare units. */
export type SayAmount = (units: bigint) => string;

/** `holder` has `have`, `held` of it already in flight with us, and the payment needs `needs`. */
export function balanceShortfall(
  holder: string,
  have: bigint,
  held: bigint,
  needs: bigint,
  say: SayAmount = String,
) {
  return failure(
    "insufficient_funds",
    `${holder} holds ${say(have)}${inFlightNote(held, say)} and this payment needs ${say(needs)}`,
  );
}

/** The words a shortfall adds when part of what the source has is already in flight with us. */
export function inFlightNote(held: bigint, say: SayAmount = String): string {
  return held > 0n ? `, ${say(held)} of it is already being settled with us,` : "";
}

/** A read this recent may accept a settle, never refuse one. */
export const READ_REUSE_MS = 5_000;

/** A read made while other replicas held something on a slot. */
export interface SharedRead {
  readonly available: bigint;
  readonly point: bigint;
  /** When it was started (unix milliseconds). */
  readonly at: number;
}

/** One of this process's settlements on a slot. */
export interface LocalHold {
  readonly key: string;
  readonly amount: bigint;
  readonly transactions?: readonly string[] | undefined;
  /** Where it landed, once it did. */
  readonly landedIn?: bigint | undefined;
}

/** What the decision needs of this process's ledger. */
export interface LocalHolds {
  /** Whether this process knows settlement `key` (in flight or landed): its ledger counts it. */
  knows(key: string): boolean;
  /** This process's settlements holding something on `slot` (landed or not), but `except`. */
  on(slot: string, except: string): LocalHold[];
  sharedRead(slot: string): SharedRead | undefined;
  keepSharedRead(slot: string, read: SharedRead): void;
}

type Hold = LocalHold & { readonly slot: string; readonly transactions: readonly string[] };

export async function decideShared<S extends { readonly amount: bigint }>(
  local: LocalHolds,
  reads: LedgerReads<S>,
  key: string,
  spends: readonly S[],
  slots: readonly string[],
  held: readonly HeldElsewhere[],
): Promise<Failure | undefined> {
  // Settlements of this process count from its own ledger (it knows those not yet in the store).
  const others = held.filter((h) => !local.knows(h.key));
  if (others.length === 0) return undefined;
  const stored = new Map(held.map((h) => [`${h.key} ${h.slot}`, h.hashes]));
  const ours = [...new Set(slots)].flatMap((slot) =>
    local.on(slot, key).map((h) => ({
      ...h,
      slot,
      transactions: h.transactions ?? stored.get(`${h.key} ${slot}`) ?? [],
    })),
  );
  const holds: Hold[] = [...others.map((h) => ({ ...h, transactions: h.hashes })), ...ours];
  /** What a read at `point` does not show yet on `slot`. */
  const unseen = (slot: string, point: bigint, landed?: ReadonlyMap<string, bigint>) =>
    holds
      .filter((h) => h.slot === slot && !(h.landedIn !== undefined && h.landedIn <= point))
      .filter((h) => !landed?.has(h.key))
      .reduce((sum, h) => sum + h.amount, 0n);

  const now = Date.now();
  const covered = spends.every((spend, i) => {
    const slot = slots[i] as string;
    const read = local.sharedRead(slot);
    return (
      read !== undefined &&
      now - read.at <= READ_REUSE_MS &&
      unseen(slot, read.point) + spend.amount <= read.available
    );
  });
  if (covered) return undefined;

  const read = await reads.read(spends, toCheck(holds));
  for (const [i, slot] of slots.entries()) {
    local.keepSharedRead(slot, {
      available: read.available[i] as bigint,
      point: read.point,
      at: now,
    });
  }
  for (const [i, spend] of spends.entries()) {
    const have = read.available[i] as bigint;
    const inFlight = unseen(slots[i] as string, read.point, read.landed);
    if (inFlight + spend.amount > have) return reads.shortfall(spend, have, inFlight);
  }
  return undefined;
}

/** The holds not known to have landed whose transactions the family can look for, once each. */
function toCheck(holds: readonly Hold[]): HoldToCheck[] {
  const byKey = new Map<string, HoldToCheck>();
  for (const h of holds) {
    if (h.landedIn !== undefined || h.transactions.length === 0) continue;
    byKey.set(h.key, { key: h.key, transactions: h.transactions });
  }
  return [...byKey.values()];
}
