/**
 * An x402 scheme on EVM chains, as the EVM family routes to it: the transfer method a request
 * uses, the kinds it lists on /supported, and how it completes an offer on /accepts. A scheme is
 * a folder (exact/, upto/); registering it is one line in schemes.ts.
 */

import type { SupportedKind } from "../core/family.js";
import type { Parties } from "../deny-list/deny-list.js";
import type { Failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { EvmContext, PaymentMethod } from "./context.js";

/** What a scheme may ask of the family while it lists or completes. */
export interface EvmSchemeHost {
  /** The next of our settlement accounts, in turn; undefined without any. */
  nextSigner(): string | undefined;
  /** The batch-settlement receiver authorizer's address, when it is offered to sellers. */
  readonly receiverAuthorizer?: string | undefined;
  /** The context of a served chain, for reads (a token's EIP-712 domain). */
  context(chainId: number): Promise<EvmContext>;
}

export interface EvmScheme {
  /** `requirements.scheme`. */
  readonly name: string;
  /** The payment extensions this scheme serves, as /supported declares them. */
  readonly extensions?: readonly string[];
  /** The method that settles this request (by payload shape), or why none can. */
  method(request: PaymentRequest): PaymentMethod | Failure;
  /** This scheme's kinds on a served chain. */
  kinds(chainId: number, host: EvmSchemeHost): SupportedKind[];
  /**
   * The payers and payees a request names, for the deny list, read from the payload alone;
   * absent: the payer of the transfer methods (authorization.from / owner, permit2 from).
   */
  parties?(request: PaymentRequest): Parties;
  /**
   * What the request moves of `requirements.asset` (moves.ts), from the request alone; absent:
   * `requirements.amount`.
   */
  moves?(request: PaymentRequest, op: "verify" | "settle"): SchemeMoves;
  /** POST /accepts: an offer of this scheme on a served chain, completed; absent: left out. */
  complete?(
    offer: Readonly<Record<string, unknown>>,
    chainId: number,
    host: EvmSchemeHost,
  ): Promise<Record<string, unknown> | undefined>;
}

/** An amount and the field that says it; "nothing" when the request moves none by design. */
export type SchemeMoves =
  | { readonly amount: bigint; readonly field: string }
  | "nothing"
  | undefined;
