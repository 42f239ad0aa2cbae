/**
 * What an EVM payment method module implements, and what the EVM family hands it: the chain's
 * client and settlement accounts, the journal, the ledgers and limits. One module per method
 * (EIP-3009, Permit2, …); the family picks one by scheme and payload shape.
 */
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
  /** Payers whose settlements keep reverting on chain wait a while. */
  readonly throttle: PayerThrottle;
  /** A success is written down before it is answered, once (core/answers.ts). */
  readonly answers: Answers;
  /** Wasted gas, counted against payers, assets and this chain's hourly budget. */
  readonly gasAtRisk: GasAtRisk;
  /** The only assets settled on this chain, when the operator listed them (lower case). */
  readonly allowedAssets?: ReadonlySet<string> | undefined;
  /** Wall-clock unix seconds: validity windows are checked against the host clock, as x402 does. */
  readonly now: () => number;
  /** Whether to watch `submitted` settlements land in the background (long-running servers). */
  readonly watchSubmitted: boolean;
  /** Every address that settles for this facilitator: its signers' and those known without keys. */
  readonly ownSenders: readonly Address[];
  /** Wallet factories whose undeployed wallets may pay (ERC-6492); none by default. */
  readonly erc6492Factories: readonly Address[];
  /** What a scheme made of the family's options (its settings, its state), made once. */
  own<Own>(part: SchemeOwn<Own>): Own;
  /** The ERC-8021 builder code our transactions carry (chain/builder-code.ts); none by default. */
  readonly builderCode?: BuilderCode | undefined;
  /** What a scheme keeps for the life of this facilitator, one per name (made on first use). */
  kept<T>(name: string, make: () => T): T;
}

/**
 * What a scheme makes, once per family, of the family's options (`Options`, its own part of them):
 * its resolved settings and the state it keeps; registered with the scheme (EvmScheme.own).
 */
export interface SchemeOwn<Own, Options = never> {
  /** Unique among schemes: what it is kept under. */
  readonly name: string;
  make(options: Options): Own;
}

export interface PaymentMethod {
  readonly name: string;
  /** Whether this method understands the shape of `paymentPayload.payload`. */
  accepts(payload: Readonly<Record<string, unknown>>): boolean;
  verify(ctx: EvmContext, request: PaymentRequest): Promise<VerifyResult>;
  settle(ctx: EvmContext, request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult>;
  /** The key the payment is written down under (what the chain consumes); undefined if unreadable. */
  settlementKey(ctx: EvmContext, request: PaymentRequest): string | undefined;
}
