/**
 * An x402 scheme on EVM chains, as the EVM family routes to it: the transfer method a request
 * uses, the kinds it lists on /supported, and how it completes an offer on /accepts. A scheme is
 * a folder (exact/, upto/); registering it is one line in schemes.ts. What it owns besides (its
 * settings, what it keeps, its gas bounds) reaches the family through the same registration.
 */

import type { SupportedKind } from "../core/family.js";
import type { SchemeRow } from "../core/scheme-settings.js";
import type { Parties } from "../deny-list/deny-list.js";
import type { Failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SchemeGas } from "./chain/gas-bounds.js";
import type { EvmContext, PaymentMethod, SchemeOwn } from "./context.js";

/** What a scheme may ask of the family while it lists or completes. */
export interface EvmSchemeHost {
  /** The next of our settlement accounts, in turn; undefined without any. */
  nextSigner(): string | undefined;
  /** What a scheme made of the family's options (SchemeOwn), made once. */
  own<Own>(part: SchemeOwn<Own>): Own;
  /** The context of a served chain, for reads (a token's EIP-712 domain). */
  context(chainId: number): Promise<EvmContext>;
}

/** A scheme's rows of the CLI's settings table, and the family's options their values make. */
export interface SchemeSettings<Rows extends Readonly<Record<string, SchemeRow>>, Options> {
  readonly rows: Rows;
  /**
   * The options of the family from the values of the rows of kind "value" (a row not given: its
   * default, else absent); `server`: a long-running server, not a one-shot command.
   */
  options(values: Readonly<Record<string, unknown>>, run: { readonly server: boolean }): Options;
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
  /** Its own settings (flags, environment, config keys), as rows of the CLI's settings table. */
  // biome-ignore lint/suspicious/noExplicitAny: each scheme's rows and options are its own
  readonly settings?: SchemeSettings<Readonly<Record<string, SchemeRow>>, any>;
  /** What it makes of the family's options for its requests: its settings and state. */
  // biome-ignore lint/suspicious/noExplicitAny: each scheme's options are its own
  readonly own?: SchemeOwn<unknown, any>;
  /** Its own kinds of transaction and their default bounds, set by name in gasBounds too. */
  readonly gas?: readonly SchemeGas[];
}

/** An amount and the field that says it; "nothing" when the request moves none by design. */
export type SchemeMoves =
  | { readonly amount: bigint; readonly field: string }
  | "nothing"
  | undefined;
