/**
 * GET /metrics for `facilitator serve`. prom-client loads only when serve asks (cold CLI start);
 * each instance has its own registry, so facilitators in one process don't mix.
 */
import type * as Prom from "prom-client";
import type { MetricsSink, SettleStage, SvmTransactionEvent } from "../core/metrics.js";
import type { Facilitator } from "../facilitator.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name, knownNetwork } from "../protocol/networks.js";
import { looksSolana, solanaCluster, solanaNetworkOf } from "../protocol/solana-networks.js";
import type { HttpMetrics } from "./handler.js";
import { feePayerBalances, signerBalances } from "./health.js";

/** Balances are read at scrape time, each within this: a dead RPC must not hang /metrics. */
const BALANCE_TIMEOUT_MS = 2_000;
/** Receipts remembered, so a receipt reported twice (a reconciled retry) counts once. */
const SEEN_RECEIPTS = 10_000;
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const read = (node: unknown, key: string): unknown =>
  typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined;

export class Metrics implements MetricsSink, HttpMetrics {
  readonly registry: Prom.Registry;
  readonly #requests: Prom.Counter<"op" | "network" | "outcome">;
  readonly #requestSeconds: Prom.Histogram<"op" | "network">;
  readonly #keyRequests: Prom.Counter<"key" | "op" | "outcome">;
  readonly #sent: Prom.Counter<"chain_id" | "signer">;
  readonly #reverted: Prom.Counter<"chain_id" | "signer">;
  readonly #replaced: Prom.Counter<"chain_id" | "signer">;
  readonly #gas: Prom.Counter<"chain_id" | "signer">;
  readonly #inFlight: Prom.Gauge<"chain_id" | "signer">;
  readonly #rpcErrors: Prom.Counter<"endpoint" | "reason">;
  readonly #svmTransactions: Prom.Counter<"network" | "fee_payer" | "outcome">;
  readonly #svmFees: Prom.Counter<"network" | "fee_payer">;
  readonly #storeSeconds: Prom.Histogram<"op">;
  readonly #settleStages: Prom.Histogram<"network" | "stage">;
  readonly #seen = new Set<string>();
  #facilitator: Facilitator | undefined;
  /** Chains of configured RPCs: request labels name them, or a well-known network, or "other". */
  #configured = new Set<number>();
  /** The Solana clusters a configured RPC serves. */
  #solana = new Set<string>();

  constructor(prom: typeof Prom) {
    const registry = new prom.Registry();
    this.registry = registry;
    const registers = [registry];
    const chainSigner = ["chain_id", "signer"] as const;
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new prom.Counter<L>({ name: `facilitator_${name}`, help, labelNames, registers });
    const histogram = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      buckets = SECONDS,
    ) =>
      new prom.Histogram<L>({ name: `facilitator_${name}`, help, labelNames, buckets, registers });
    this.#requests = counter(
      "requests_total",
      "verify and settle requests answered, by outcome (success or the error code)",
      ["op", "network", "outcome"],
    );
    this.#requestSeconds = histogram("request_seconds", "time to answer verify and settle", [
      "op",
      "network",
    ]);
    this.#keyRequests = counter(
      "api_key_requests_total",
      "verify and settle requests of each named API key (its name, never the key): served, or refused over its rate",
      ["key", "op", "outcome"],
    );
    this.#sent = counter("transactions_sent_total", "transactions the node accepted", chainSigner);
    this.#reverted = counter(
      "transactions_reverted_total",
      "our receipts that reverted",
      chainSigner,
    );
    this.#replaced = counter(
      "transactions_replaced_total",
      "stuck transactions replaced at the same nonce with a higher fee",
      chainSigner,
    );
    this.#gas = counter(
      "gas_spent_wei_total",
      "gasUsed × effectiveGasPrice of our receipts, in wei",
      chainSigner,
    );
    this.#inFlight = new prom.Gauge({
      name: "facilitator_settles_in_flight",
      help: "settlement transactions sent or being sent and not yet answered, per signer",
      labelNames: chainSigner,
      registers,
    });
    this.#rpcErrors = counter(
      "rpc_errors_total",
      "RPC requests that got no answer from the node (endpoint shown as scheme, host and port)",
      ["endpoint", "reason"],
    );
    this.#storeSeconds = histogram("store_seconds", "settlement store operations", ["op"]);
    // A journal record is made durable in a millisecond or so: finer buckets than requests'.
    this.#settleStages = histogram(
      "settle_stage_seconds",
      "where settles spend their time: checks (with chain reads and simulation), journal (the record made durable before the broadcast), chain (from the broadcast to the answer)",
      ["network", "stage"],
      [0.001, 0.0025, ...SECONDS],
    );
    this.#svmTransactions = counter(
      "svm_transactions_total",
      "Solana settlement transactions, by outcome (sent, confirmed, failed, expired)",
      ["network", "fee_payer", "outcome"],
    );
    this.#svmFees = counter(
      "svm_fees_lamports_total",
      "what our Solana fee payers paid for settlement transactions that landed, in lamports",
      ["network", "fee_payer"],
    );
    const metrics = this;
    new prom.Gauge({
      name: "facilitator_signer_balance_wei",
      help: "native balance of each signer on each chain of a configured RPC, read at scrape time",
      labelNames: chainSigner,
      registers,
      async collect() {
        this.reset();
        const facilitator = metrics.#facilitator;
        if (!facilitator) return;
        const balances = await signerBalances(facilitator, BALANCE_TIMEOUT_MS).catch(() => []);
        for (const b of balances) {
          if (b.amount === undefined) continue;
          this.set({ chain_id: String(b.network), signer: b.holder }, Number(b.amount));
        }
      },
    });
    new prom.Gauge({
      name: "facilitator_svm_fee_payer_lamports",
      help: "SOL of each Solana fee payer on each served cluster, in lamports, read at scrape time",
      labelNames: ["network", "fee_payer"],
      registers,
      async collect() {
        this.reset();
        const facilitator = metrics.#facilitator;
        if (!facilitator) return;
        const balances = await feePayerBalances(facilitator, BALANCE_TIMEOUT_MS).catch(() => []);
        for (const b of balances) {
          if (b.amount === undefined) continue;
          this.set({ network: b.network, fee_payer: b.holder }, Number(b.amount));
        }
      },
    });
    const perChain = (name: string, help: string, read: "wasted" | "budget") =>
      new prom.Gauge({
        name: `facilitator_${name}`,
        help,
        labelNames: ["chain_id"],
        registers,
        collect() {
          this.reset();
          for (const [chainId, gas] of metrics.#wastedGas()) {
            this.set({ chain_id: String(chainId) }, Number(gas[read]));
          }
        },
      });
    perChain(
      "wasted_gas",
      "gas our settlements wasted (reverted, ran out of gas, moved nothing; ether sent to payers for approvals that never landed, or have not yet) in the last hour, per chain",
      "wasted",
    );
    perChain(
      "wasted_gas_budget",
      "wasted gas per chain and hour past which a payer is refused once it wasted as many settlements as it landed here (every payer past twice it)",
      "budget",
    );
    prom.collectDefaultMetrics({ register: registry, prefix: "facilitator_" });
  }

  /** Per chain of a configured RPC or with waste: the gas wasted in the window, and the budget. */
  #wastedGas(): Map<number, { wasted: bigint; budget: bigint }> {
    const found = new Map<number, { wasted: bigint; budget: bigint }>();
    const gasAtRisk = this.#facilitator?.gasAtRisk;
    if (!gasAtRisk) return found;
    for (const chainId of new Set([...this.#configured, ...gasAtRisk.chains()])) {
      found.set(chainId, {
        wasted: gasAtRisk.wastedGas(chainId),
        budget: gasAtRisk.budget(chainId),
      });
    }
    return found;
  }

  /** The facilitator whose signers' balances /metrics reports. */
  attach(facilitator: Facilitator): void {
    this.#facilitator = facilitator;
    this.#refreshChains();
  }

  #refreshChains(): void {
    void this.#facilitator?.rpc.servedSolanaNetworks().then(
      (networks) => {
        this.#solana = new Set(networks);
      },
      () => undefined,
    );
    void this.#facilitator?.rpc.configuredChainIds().then(
      (ids) => {
        this.#configured = new Set(ids);
      },
      () => undefined,
    );
  }

  /** The request's network as a bounded label: a CAIP-2 id served or well known, else a word. */
  #network(body: unknown): string {
    const requirements = read(body, "requirements") ?? read(body, "paymentRequirements");
    const name = read(requirements, "network");
    if (typeof name !== "string") return "unknown";
    if (looksSolana(name)) {
      const cluster = solanaNetworkOf(name, 1) ?? solanaNetworkOf(name, 2);
      if (cluster === undefined) return "unknown";
      return solanaCluster(cluster) || this.#solana.has(cluster) ? cluster : "other";
    }
    const chainId = chainIdOfCaip2(name) ?? chainIdOfV1Name(name);
    if (chainId === undefined) return "unknown";
    return knownNetwork(chainId) || this.#configured.has(chainId) ? caip2(chainId) : "other";
  }

  observeRequest(op: "verify" | "settle", body: unknown, outcome: string, seconds: number): void {
    const network = this.#network(body);
    this.#requests.inc({ op, network, outcome });
    this.#requestSeconds.observe({ op, network }, seconds);
  }

  observeCaller(key: string, op: "verify" | "settle", outcome: "served" | "rate_limited"): void {
    this.#keyRequests.inc({ key, op, outcome });
  }

  /** How long a settlement store operation took (the PostgreSQL store reports here). */
  observeStore(op: string, seconds: number): void {
    this.#storeSeconds.observe({ op }, seconds);
  }

  transactionSent(chainId: number, signer: string): void {
    this.#sent.inc({ chain_id: String(chainId), signer });
  }

  transactionReplaced(chainId: number, signer: string): void {
    this.#replaced.inc({ chain_id: String(chainId), signer });
  }

  transactionMined(
    chainId: number,
    receipt: { hash: string; signer: string; reverted: boolean; gasWei: bigint },
  ): void {
    if (!this.#firstTime(receipt.hash.toLowerCase())) return;
    const labels = { chain_id: String(chainId), signer: receipt.signer };
    if (receipt.reverted) this.#reverted.inc(labels);
    this.#gas.inc(labels, Number(receipt.gasWei));
  }

  settling(chainId: number, signer: string): () => void {
    const labels = { chain_id: String(chainId), signer };
    this.#inFlight.inc(labels);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight.dec(labels);
    };
  }

  rpcError(endpoint: string, reason: string): void {
    this.#rpcErrors.inc({ endpoint, reason });
  }

  settleStage(network: string, stage: SettleStage, seconds: number): void {
    this.#settleStages.observe({ network, stage }, seconds);
  }

  svmTransaction(event: SvmTransactionEvent): void {
    if (!this.#firstTime(`${event.signature} ${event.outcome}`)) return;
    const { network, feePayer: fee_payer, outcome } = event;
    this.#svmTransactions.inc({ network, fee_payer, outcome });
    if (event.feeLamports !== undefined) {
      this.#svmFees.inc({ network, fee_payer }, Number(event.feeLamports));
    }
  }

  /** Whether `key` is reported for the first time (of the last SEEN_RECEIPTS). */
  #firstTime(key: string): boolean {
    if (this.#seen.has(key)) return false;
    this.#seen.add(key);
    const oldest = this.#seen.values().next().value;
    if (this.#seen.size > SEEN_RECEIPTS && oldest !== undefined) this.#seen.delete(oldest);
    return true;
  }

  async render(): Promise<{ contentType: string; text: string }> {
    this.#refreshChains();
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}

/** Loads prom-client and makes a Metrics with a registry of its own. */
export async function createMetrics(): Promise<Metrics> {
  const prom = await import("prom-client");
  return new Metrics(prom);
}
