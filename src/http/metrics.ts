/** GET /metrics: prom-client loaded only by serve, a registry per instance. */
import type * as Prom from "prom-client";
import type { MetricsSink } from "../core/metrics.js";
import { setNewest } from "../core/newest.js";
import type { Facilitator } from "../facilitator.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name, knownNetwork } from "../protocol/networks.js";
import { looksSolana, solanaCluster, solanaNetworkOf } from "../protocol/solana-networks.js";
import { field } from "../protocol/words.js";
import { feePayerBalances, signerBalances } from "./health.js";

/** Balances are read at scrape time, each within this: a dead RPC must not hang /metrics. */
const BALANCE_TIMEOUT_MS = 2_000;
/** Receipts remembered, so a receipt reported twice (a reconciled retry) counts once. */
const SEEN_RECEIPTS = 10_000;
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Loads prom-client and makes the metrics, with a registry of their own. */
export async function createMetrics() {
  const prom = await import("prom-client");
  const registry = new prom.Registry();
  const registers = [registry];
  const chainSigner = ["chain_id", "signer"] as const;
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new prom.Counter<L>({ name: `facilitator_${name}`, help, labelNames, registers });
  const histogram = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets = SECONDS,
  ) => new prom.Histogram<L>({ name: `facilitator_${name}`, help, labelNames, buckets, registers });
  /** A gauge read at scrape time: `values` gives each of its label sets' value. */
  const scraped = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    values: () => Promise<[Prom.LabelValues<L>, number][]>,
  ) =>
    new prom.Gauge<L>({
      name: `facilitator_${name}`,
      help,
      labelNames,
      registers,
      async collect() {
        this.reset();
        for (const [labels, value] of await values()) this.set(labels, value);
      },
    });

  const requests = counter(
    "requests_total",
    "verify and settle requests answered, by outcome (success or the error code)",
    ["op", "network", "outcome"],
  );
  const requestSeconds = histogram("request_seconds", "time to answer verify and settle", [
    "op",
    "network",
  ]);
  const keyRequests = counter(
    "api_key_requests_total",
    "verify and settle requests of each named API key (its name, never the key): served, or refused over its rate",
    ["key", "op", "outcome"],
  );
  const perSigner = (name: string, help: string) => counter(name, help, chainSigner);
  const sent = perSigner("transactions_sent_total", "transactions the node accepted");
  const reverted = perSigner("transactions_reverted_total", "our receipts that reverted");
  const replaced = perSigner(
    "transactions_replaced_total",
    "stuck transactions replaced at the same nonce with a higher fee",
  );
  const gas = perSigner(
    "gas_spent_wei_total",
    "gasUsed × effectiveGasPrice of our receipts, in wei",
  );
  const inFlight = new prom.Gauge({
    name: "facilitator_settles_in_flight",
    help: "settlement transactions sent or being sent and not yet answered, per signer",
    labelNames: chainSigner,
    registers,
  });
  const rpcErrors = counter(
    "rpc_errors_total",
    "RPC requests that got no answer from the node (endpoint shown as scheme, host and port)",
    ["endpoint", "reason"],
  );
  const storeSeconds = histogram("store_seconds", "settlement store operations", ["op"]);
  // A journal record is made durable in a millisecond or so: finer buckets than requests'.
  const settleStages = histogram(
    "settle_stage_seconds",
    "where settles spend their time: checks (with chain reads and simulation), journal (the record made durable before the broadcast), chain (from the broadcast to the answer)",
    ["network", "stage"],
    [0.001, 0.0025, ...SECONDS],
  );
  const svmTransactions = counter(
    "svm_transactions_total",
    "Solana settlement transactions, by outcome (sent, confirmed, failed, expired)",
    ["network", "fee_payer", "outcome"],
  );
  const svmFees = counter(
    "svm_fees_lamports_total",
    "what our Solana fee payers paid for settlement transactions that landed, in lamports",
    ["network", "fee_payer"],
  );

  let facilitator: Facilitator | undefined;
  /** Chains of configured RPCs: request labels name them, or a well-known network, or "other". */
  let configured = new Set<number>();
  /** The Solana clusters a configured RPC serves. */
  let solana = new Set<string>();
  const seen = new Map<string, true>();

  /** The balances read (each bounded), the unreadable left out, each under its labels. */
  const balances = async <N, L extends string>(
    of: (
      facilitator: Facilitator,
      timeoutMs: number,
    ) => Promise<{ network: N; holder: string; amount?: bigint | undefined }[]>,
    labels: (network: N, holder: string) => Prom.LabelValues<L>,
  ): Promise<[Prom.LabelValues<L>, number][]> => {
    const found = facilitator ? await of(facilitator, BALANCE_TIMEOUT_MS).catch(() => []) : [];
    return found.flatMap(({ network, holder, amount }) =>
      amount === undefined ? [] : [[labels(network, holder), Number(amount)]],
    );
  };
  scraped(
    "signer_balance_wei",
    "native balance of each signer on each chain of a configured RPC, read at scrape time",
    chainSigner,
    () => balances(signerBalances, (chainId, signer) => ({ chain_id: String(chainId), signer })),
  );
  scraped(
    "svm_fee_payer_lamports",
    "SOL of each Solana fee payer on each served cluster, in lamports, read at scrape time",
    ["network", "fee_payer"],
    () => balances(feePayerBalances, (network, fee_payer) => ({ network, fee_payer })),
  );
  /** Per chain of a configured RPC or with waste: the gas wasted in the window, or the budget. */
  const perChain = (name: string, help: string, which: "wastedGas" | "budget") =>
    scraped(name, help, ["chain_id"], async () => {
      const gasAtRisk = facilitator?.gasAtRisk;
      if (!gasAtRisk) return [];
      const chains = new Set([...configured, ...gasAtRisk.chains()]);
      return [...chains].map((id) => [{ chain_id: String(id) }, Number(gasAtRisk[which](id))]);
    });
  perChain(
    "wasted_gas",
    "gas our settlements wasted (reverted, ran out of gas, moved nothing; ether sent to payers for approvals that never landed, or have not yet) in the last hour, per chain",
    "wastedGas",
  );
  perChain(
    "wasted_gas_budget",
    "wasted gas per chain and hour past which a payer is refused once it wasted as many settlements as it landed here (every payer past twice it)",
    "budget",
  );
  prom.collectDefaultMetrics({ register: registry, prefix: "facilitator_" });

  const refreshChains = () => {
    void facilitator?.rpc.servedSolanaNetworks().then(
      (networks) => {
        solana = new Set(networks);
      },
      () => undefined,
    );
    void facilitator?.rpc.configuredChainIds().then(
      (ids) => {
        configured = new Set(ids);
      },
      () => undefined,
    );
  };

  /** The request's network as a bounded label: a CAIP-2 id served or well known, else a word. */
  const networkLabel = (body: unknown): string => {
    const requirements = field(body, "requirements") ?? field(body, "paymentRequirements");
    const name = field(requirements, "network");
    if (typeof name !== "string") return "unknown";
    if (looksSolana(name)) {
      const cluster = solanaNetworkOf(name, 1) ?? solanaNetworkOf(name, 2);
      if (cluster === undefined) return "unknown";
      return solanaCluster(cluster) || solana.has(cluster) ? cluster : "other";
    }
    const chainId = chainIdOfCaip2(name) ?? chainIdOfV1Name(name);
    if (chainId === undefined) return "unknown";
    return knownNetwork(chainId) || configured.has(chainId) ? caip2(chainId) : "other";
  };

  /** Whether `key` is reported for the first time (of the last SEEN_RECEIPTS). */
  const firstTime = (key: string): boolean => {
    if (seen.has(key)) return false;
    setNewest(seen, key, true, SEEN_RECEIPTS);
    return true;
  };

  return {
    registry,
    /** The facilitator whose signers' balances /metrics reports. */
    attach(attached: Facilitator): void {
      facilitator = attached;
      refreshChains();
    },
    /** A /verify or /settle answered; `body` is the parsed request (its network), if it parsed. */
    observeRequest(op: "verify" | "settle", body: unknown, outcome: string, seconds: number) {
      const network = networkLabel(body);
      requests.inc({ op, network, outcome });
      requestSeconds.observe({ op, network }, seconds);
    },
    /** A /verify or /settle of a named caller (never its key): served, or over its rate. */
    observeCaller: (key: string, op: "verify" | "settle", outcome: "served" | "rate_limited") =>
      keyRequests.inc({ key, op, outcome }),
    /** How long a settlement store operation took (the PostgreSQL store reports here). */
    observeStore: (op: string, seconds: number) => storeSeconds.observe({ op }, seconds),
    transactionSent: (chainId, signer) => sent.inc({ chain_id: String(chainId), signer }),
    transactionReplaced: (chainId, signer) => replaced.inc({ chain_id: String(chainId), signer }),
    transactionMined(chainId, receipt) {
      if (!firstTime(receipt.hash.toLowerCase())) return;
      const labels = { chain_id: String(chainId), signer: receipt.signer };
      if (receipt.reverted) reverted.inc(labels);
      gas.inc(labels, Number(receipt.gasWei));
    },
    settling(chainId, signer) {
      const labels = { chain_id: String(chainId), signer };
      inFlight.inc(labels);
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlight.dec(labels);
      };
    },
    rpcError: (endpoint, reason) => rpcErrors.inc({ endpoint, reason }),
    settleStage: (network, stage, seconds) => settleStages.observe({ network, stage }, seconds),
    svmTransaction(event) {
      if (!firstTime(`${event.signature} ${event.outcome}`)) return;
      const { network, feePayer: fee_payer, outcome } = event;
      svmTransactions.inc({ network, fee_payer, outcome });
      if (event.feeLamports !== undefined) {
        svmFees.inc({ network, fee_payer }, Number(event.feeLamports));
      }
    },
    async render() {
      refreshChains();
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  } satisfies Required<MetricsSink> & Record<string, unknown>;
}

export type Metrics = Awaited<ReturnType<typeof createMetrics>>;
