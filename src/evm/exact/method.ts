/** The interface between the shared exact-EVM pipeline (pipeline.ts) and a transfer method. */
import type { Address } from "viem";
import type { JournalEntry } from "../../core/store.js";
import type { Failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { EvmTransfer } from "../chain/entry.js";
import type { GasNeed } from "../chain/gas-bounds.js";
import type { Spend } from "../chain/ledger-reads.js";
import type { ContractCall } from "../chain/outcome.js";
import type { Prelude } from "../chain/prelude.js";
import type { EvmContext } from "../context.js";
import type { Step } from "./checks.js";

/** What a method knows of a payment before any chain read. */
export interface Identified {
  /** What the chain consumes when it settles (the journal's and the claim's key). */
  readonly key: string;
  readonly payer: Address;
  /** The token paid with: wasted settlements are counted against it too. */
  readonly asset: Address;
  /** Names a reusable gas estimate when the call costs the same each time (see chain/gas.ts). */
  readonly gasKey?: string | undefined;
}

/** A payment that passed verification, ready to settle. */
export interface Verified<P> {
  readonly payment: P;
  readonly call: ContractCall;
  /** What `call` does, for the most gas it may be sent with (chain/gas-bounds.ts). */
  readonly gas: GasNeed;
  /** The Transfer that proves the payment in the receipt. */
  readonly expect: EvmTransfer;
  /** What the payer's balance (or allowance) must cover, counted against what is in flight. */
  readonly spends: readonly Spend[];
  /** Undefined when the gas must be estimated every time (contract wallets). */
  readonly gasKey?: string | undefined;
  /** The settlement account that must send it, when the payer named one (as spender). */
  readonly signer?: Address | undefined;
  /** Transactions that must land, in order, before `call` (which cannot be simulated before). */
  readonly preludes?: readonly Prelude[] | undefined;
  /** What `upto` settles (less than signed); zero succeeds without a transaction. */
  readonly settledAmount?: bigint | undefined;
}

export interface ExactMethod<P> {
  readonly name: string;
  /** Whether this method understands the shape of `paymentPayload.payload`. */
  accepts(payload: Readonly<Record<string, unknown>>): boolean;
  parse(ctx: EvmContext, request: PaymentRequest): Step<P>;
  identify(ctx: EvmContext, payment: P): Identified;
  /** The call a settle sends when the payload alone names it: estimated beside verify's reads. */
  plainCall?(ctx: EvmContext, payment: P): ContractCall | undefined;
  /** Every check; `simulate` also runs the transfer against the latest block among the reads. */
  verify(
    ctx: EvmContext,
    request: PaymentRequest,
    payment: P,
    /** `settling`: called by settle (which may settle less than was signed, for `upto`). */
    options: { readonly simulate: boolean; readonly settling?: boolean },
  ): Promise<Step<Verified<P>>>;
  /** Null when a journaled settlement of this key is this very payment, signed by the payer. */
  sameAsJournal(ctx: EvmContext, payment: P, entry: JournalEntry): Promise<Failure | null>;
  /** Why the transfer would revert (or did), in the reference's order of causes. */
  diagnose(ctx: EvmContext, payment: P, revert: string | undefined): Promise<Failure>;
  /** The x402 reason of a settlement mined and reverted (default: exact's transaction_failed). */
  readonly revertedReason?: string | undefined;
}
