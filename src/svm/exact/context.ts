/** What the facilitator hands the Solana `exact` scheme (for settle: journal, throttle, waits). */
import type { Client } from "viem";
import type { Answers } from "../../core/answers.js";
import type { InFlightLedger } from "../../core/ledger.js";
import type { MetricsSink } from "../../core/metrics.js";
import type { SettlementStore } from "../../core/store.js";
import type { PayerThrottle } from "../../core/throttle.js";
import type { SvmFeePayer } from "../chain/keys.js";
import type { SmartWalletOptions } from "./smart-wallet.js";

export interface SvmContext {
  /** JSON-RPC to the cluster (viem's transport: timeouts, Basic auth, metrics). */
  readonly client: Client;
  /** The cluster's CAIP-2 id. */
  readonly network: string;
  /** This facilitator's fee payer addresses. */
  readonly feePayers: readonly string[];
  /** The most lamports one settlement may cost the fee payer (the default cap when undefined). */
  readonly maxFeeLamports?: bigint | undefined;
  /** Payments from smart wallets (smart-wallet.ts) are taken with these; off when undefined. */
  readonly smartWallets?: SmartWalletOptions | undefined;
}

export interface SvmSettleContext extends SvmContext {
  /** The fee payers' keys: the one a transaction names signs it. */
  readonly keys: readonly SvmFeePayer[];
  /** Where every broadcast is written down before it happens. */
  readonly journal: SettlementStore;
  /** A success is written down before it is answered, once (core/answers.ts). */
  readonly answers: Answers;
  /** What payers have in flight with us on Solana. */
  readonly ledger: InFlightLedger;
  /** Payers whose settlements keep failing on chain wait a while. */
  readonly throttle: PayerThrottle;
  /** How long `confirmed` waits before answering `settlement_pending`. */
  readonly confirmTimeoutMs: number;
  /** How often a signature's status is polled. */
  readonly pollMs: number;
  /** Whether to follow `submitted` (and pending) settlements in the background (serve). */
  readonly watchSubmitted: boolean;
  /** Told of transactions sent and how they came out (serve's metrics). */
  readonly metrics?: MetricsSink | undefined;
}
