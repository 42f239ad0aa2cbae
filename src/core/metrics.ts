/** What the core tells an optional metrics sink (serve's Prometheus one: src/http/metrics.ts). */
/** Where a settle's time goes: `checks`, `journal` (the durable record), `chain` (until answered). */
export type SettleStage = "checks" | "journal" | "chain";

export interface MetricsSink {
  /** The node accepted a settlement transaction of `signer`. */
  transactionSent(chainId: number, signer: string): void;
  /** A stuck transaction was replaced at the same nonce with a higher fee. */
  transactionReplaced(chainId: number, signer: string): void;
  /** A receipt of ours (`gasWei`: gasUsed × effectiveGasPrice); counted once per hash. */
  transactionMined(
    chainId: number,
    receipt: { hash: string; signer: string; reverted: boolean; gasWei: bigint },
  ): void;
  /** A settle now holds a transaction of `signer`; the returned function says it no longer does. */
  settling(chainId: number, signer: string): () => void;
  /** A request to `endpoint` (redacted: scheme, host, port) failed without a node's answer. */
  rpcError(endpoint: string, reason: string): void;
  /** A Solana settlement's outcome and, once landed, our fee; counted once per outcome. */
  svmTransaction?(event: SvmTransactionEvent): void;
  /** A settle on `network` (CAIP-2) spent `seconds` in `stage`. */
  settleStage?(network: string, stage: SettleStage, seconds: number): void;
}

export interface SvmTransactionEvent {
  readonly network: string;
  readonly feePayer: string;
  readonly signature: string;
  readonly outcome: "sent" | "confirmed" | "failed" | "expired";
  readonly feeLamports?: bigint | undefined;
}

/** A settle's stage observer for `network` (CAIP-2), or undefined when no sink listens. */
export function stageObserver(
  sink: MetricsSink | undefined,
  network: string,
): ((stage: SettleStage, seconds: number) => void) | undefined {
  if (!sink?.settleStage) return undefined;
  return (stage, seconds) => sink.settleStage?.(network, stage, seconds);
}
