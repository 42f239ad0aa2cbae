/**
 * What the chain code needs to reach one chain and keep its records: the client, the journal, and
 * how long to wait and how much to pay. The schemes' context (../context.ts) adds the rest.
 */
import type { PublicClient } from "viem";
import type { MetricsSink } from "../../core/metrics.js";
import type { SettlementStore } from "../../core/store.js";

export interface ChainAccess {
  readonly client: PublicClient;
  readonly chainId: number;
  /** Where every broadcast is written down before it happens. */
  readonly journal: SettlementStore;
  /** Told of transactions sent, replaced and mined, and of settles in flight (serve's metrics). */
  readonly metrics?: MetricsSink | undefined;
  /** The most a settlement may cost in this chain's native unit (wei); none when undefined. */
  readonly feeCapWei?: bigint | undefined;
  /** How long a transaction may sit in the mempool before it is replaced with a higher fee. */
  readonly replaceAfterMs: number;
  /** How long `confirmed` waits for a receipt before answering `settlement_pending`. */
  readonly confirmTimeoutMs: number;
  /** Blocks a receipt must be deep (1: mined) before `confirmed` answers. */
  readonly confirmations: number;
  readonly receiptPollMs: number;
}
