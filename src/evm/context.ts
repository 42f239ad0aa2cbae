/** What an EVM payment method implements, and the per-chain context the family hands it. */
import type { Address } from "viem";
import type { Answers } from "../core/answers.js";
import type { InFlightLedger } from "../core/ledger.js";
import type { PayerThrottle } from "../core/throttle.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { ChainAccess } from "./chain/access.js";
import type { BuilderCode } from "./chain/builder-code.js";
import type { GasAtRisk } from "./chain/gas-at-risk.js";
import type { SendingAccess } from "./chain/transactions.js";

export interface EvmContext extends ChainAccess, SendingAccess {
  /** What payers have in flight with us: a settle their balance cannot cover is not sent. */
  readonly inflight: InFlightLedger;
  readonly throttle: PayerThrottle;
  /** A success is written down before it is answered, once. */
  readonly answers: Answers;
  readonly gasAtRisk: GasAtRisk;
  /** The operator's listed assets on this chain (lower case). */
  readonly allowedAssets?: ReadonlySet<string> | undefined;
  /** Wall-clock unix seconds, as x402 checks validity windows. */
  readonly now: () => number;
  readonly watchSubmitted: boolean;
  /** Our signers' addresses and those known without keys. */
  readonly ownSenders: readonly Address[];
  readonly erc6492Factories: readonly Address[];
  /** What a scheme made of the family's options, made once. */
  own<Own>(part: SchemeOwn<Own>): Own;
  readonly builderCode?: BuilderCode | undefined;
  /** What a scheme keeps for the life of this facilitator, made on first use. */
  kept<T>(name: string, make: () => T): T;
}

/** What a scheme makes, once per family, of its part of the options: settings and state. */
export interface SchemeOwn<Own, Options = never> {
  readonly name: string;
  make(options: Options): Own;
}

export interface PaymentMethod {
  readonly name: string;
  /** Whether this method understands the shape of `paymentPayload.payload`. */
  accepts(payload: Readonly<Record<string, unknown>>): boolean;
  verify(ctx: EvmContext, request: PaymentRequest): Promise<VerifyResult>;
  settle(ctx: EvmContext, request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult>;
  /** The journal key (what the chain consumes); undefined if unreadable. */
  settlementKey(ctx: EvmContext, request: PaymentRequest): string | undefined;
}
