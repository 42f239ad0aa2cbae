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
  readonly client: Client;
  readonly network: string;
  readonly feePayers: readonly string[];
  /** The most lamports one settlement may cost the fee payer (the default cap when undefined). */
  readonly maxFeeLamports?: bigint | undefined;
  /** Payments from smart wallets (smart-wallet.ts) are taken with these; off when undefined. */
  readonly smartWallets?: SmartWalletOptions | undefined;
}

export interface SvmSettleContext extends SvmContext {
  readonly keys: readonly SvmFeePayer[];
  /** Where every broadcast is written down before it happens. */
  readonly journal: SettlementStore;
  /** A success is written down before it is answered, once (core/answers.ts). */
  readonly answers: Answers;
  readonly ledger: InFlightLedger;
  readonly throttle: PayerThrottle;
  /** How long `confirmed` waits before answering `settlement_pending`. */
  readonly confirmTimeoutMs: number;
  readonly pollMs: number;
  /** Whether to follow `submitted` (and pending) settlements in the background (serve). */
  readonly watchSubmitted: boolean;
  readonly metrics?: MetricsSink | undefined;
}
