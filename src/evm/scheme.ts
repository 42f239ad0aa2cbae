/** An x402 scheme on EVM chains (a folder: exact/, upto/), registered in one line in schemes.ts. */
import type { requiredAmount } from "../core/amount-floor.js";
import type { SupportedKind } from "../core/family.js";
import type { SchemeRow } from "../core/scheme-settings.js";
import type { Parties } from "../deny-list/deny-list.js";
import type { Failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SchemeGas } from "./chain/gas-bounds.js";
import type { EvmContext, PaymentMethod, SchemeOwn } from "./context.js";

/** What a scheme may ask of the family while it lists or completes. */
export interface EvmSchemeHost {
  nextSigner(): string | undefined;
  own<Own>(part: SchemeOwn<Own>): Own;
  /** For reads (a token's EIP-712 domain). */
  context(chainId: number): Promise<EvmContext>;
}

/** A scheme's rows of the CLI's settings table, and the family's options their values make. */
export interface SchemeSettings<Rows extends Readonly<Record<string, SchemeRow>>, Options> {
  readonly rows: Rows;
  /** The family's options from the "value" rows; `server`: long-running, not a one-shot. */
  options(values: Readonly<Record<string, unknown>>, run: { readonly server: boolean }): Options;
}

export interface EvmScheme {
  /** `requirements.scheme`. */
  readonly name: string;
  /** As /supported declares them. */
  readonly extensions?: readonly string[];
  /** The method that settles this request (by payload shape), or why none can. */
  method(request: PaymentRequest): PaymentMethod | Failure;
  kinds(chainId: number, host: EvmSchemeHost): SupportedKind[];
  /** Payers and payees for the deny list, from the payload; absent: the transfer's payer. */
  parties?(request: PaymentRequest): Parties;
  /** What the request moves of `requirements.asset`; absent: `requirements.amount`. */
  moves?(request: PaymentRequest, op: "verify" | "settle"): SchemeMoves;
  /** POST /accepts: an offer of this scheme on a served chain, completed; absent: left out. */
  complete?(
    offer: Readonly<Record<string, unknown>>,
    chainId: number,
    host: EvmSchemeHost,
  ): Promise<Record<string, unknown> | undefined>;
  /** Its settings, as rows of the CLI's settings table. */
  // biome-ignore lint/suspicious/noExplicitAny: each scheme's rows and options are its own
  readonly settings?: SchemeSettings<Readonly<Record<string, SchemeRow>>, any>;
  // biome-ignore lint/suspicious/noExplicitAny: each scheme's options are its own
  readonly own?: SchemeOwn<unknown, any>;
  /** Its own kinds of transaction and their default gas bounds. */
  readonly gas?: readonly SchemeGas[];
}

/** An amount and the field that says it; "nothing" when the request moves none by design. */
export type SchemeMoves = ReturnType<typeof requiredAmount> | "nothing";
