/** What the in-flight ledger (ledger.ts) asks of a family: its sources read at one point. */
import { type Failure, failure } from "../protocol/errors.js";
import type { SettlementStore } from "./store.js";

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
