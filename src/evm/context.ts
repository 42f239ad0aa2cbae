/**
 * What an EVM payment method module implements, and what the EVM family hands it: the chain's
 * client and settlement accounts, the journal, the ledgers and limits. One module per method
 * (EIP-3009, Permit2, …); the family picks one by scheme and payload shape.
 */
import type { Address, PublicClient } from "viem";
import type { MetricsSink } from "../core/metrics.js";
import type { SettlementStore } from "../core/store.js";
import type { PayerThrottle } from "../core/throttle.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { GasAtRisk } from "./chain/gas-at-risk.js";
import type { GasBounds } from "./chain/gas-bounds.js";
import type { InFlight } from "./chain/inflight.js";
import type { SignerPool } from "./chain/signers.js";

export interface EvmContext {
  readonly client: PublicClient;
  readonly chainId: number;
  /** The settlement accounts, used in turn; empty for verify-only use. */
  readonly signers: SignerPool;
  /** Where every broadcast is written down before it happens. */
  readonly journal: SettlementStore;
  /** What payers have in flight with us: a settle their balance cannot cover is not sent. */
  readonly inflight: InFlight;
  /** Payers whose settlements keep reverting on chain wait a while. */
  readonly throttle: PayerThrottle;
  /** Wasted gas, counted against payers, assets and this chain's hourly budget. */
  readonly gasAtRisk: GasAtRisk;
  /** The most gas each kind of settlement transaction may use on this chain. */
  readonly gasBounds: GasBounds;
  /** The only assets settled on this chain, when the operator listed them (lower case). */
  readonly allowedAssets?: ReadonlySet<string> | undefined;
  /** The most a settlement may cost in this chain's native unit (wei); none when undefined. */
  readonly feeCapWei?: bigint | undefined;
  /** How long a transaction may sit in the mempool before it is replaced with a higher fee. */
  readonly replaceAfterMs: number;
  /** Wall-clock unix seconds: validity windows are checked against the host clock, as x402 does. */
  readonly now: () => number;
  /** How long `confirmed` waits for a receipt before answering `settlement_pending`. */
  readonly confirmTimeoutMs: number;
  /** Blocks a receipt must be deep (1: mined) before `confirmed` answers. */
  readonly confirmations: number;
  /** Whether to watch `submitted` settlements land in the background (long-running servers). */
  readonly watchSubmitted: boolean;
  /** Wallet factories whose undeployed wallets may pay (ERC-6492); none by default. */
  readonly erc6492Factories: readonly Address[];
  readonly receiptPollMs: number;
  /** Told of transactions sent, replaced and mined, and of settles in flight (serve's metrics). */
  readonly metrics?: MetricsSink | undefined;
}

export interface PaymentMethod {
  readonly name: string;
  /** Whether this method understands the shape of `paymentPayload.payload`. */
  accepts(payload: Readonly<Record<string, unknown>>): boolean;
  verify(ctx: EvmContext, request: PaymentRequest): Promise<VerifyResult>;
  settle(ctx: EvmContext, request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult>;
}
