/** What the chain code needs to reach one chain and keep its records. */
import type { PublicClient } from "viem";
import type { MetricsSink } from "../../core/metrics.js";
import type { SettlementStore } from "../../core/store.js";

export interface ChainAccess {
  readonly client: PublicClient;
  readonly chainId: number;
  /** Where every broadcast is written down before it happens. */
  readonly journal: SettlementStore;
  readonly metrics?: MetricsSink | undefined;
  /** The most a settlement may cost (wei); none when undefined. */
  readonly feeCapWei?: bigint | undefined;
  readonly replaceAfterMs: number;
  readonly confirmTimeoutMs: number;
  /** Blocks a receipt must be deep (1: mined) before `confirmed` answers. */
  readonly confirmations: number;
  readonly receiptPollMs: number;
}
