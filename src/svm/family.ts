/** The Solana family: routes `exact` payments to the scheme, loaded lazily (EVM never loads the kit). */
import { timeoutOf } from "../core/accepts.js";
import { requiredAmount } from "../core/amount-floor.js";
import { Answers } from "../core/answers.js";
import type {
  ChainFamily,
  Followed,
  Moved,
  Observed,
  Offer,
  Routed,
  SettlementKey,
  Supported,
  SupportedKind,
} from "../core/family.js";
import { routedTo, runRouted, signersUnder } from "../core/family.js";
import { InFlightLedger } from "../core/ledger.js";
import type { MaySend } from "../core/settle-loop.js";
import { isAnswered, type JournalEntry, namespaceOf, type SettlementStore } from "../core/store.js";
import type { PayerThrottle } from "../core/throttle.js";
import { failed } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import {
  isSolanaAddress,
  looksSolana,
  solanaCluster,
  solanaNetworkOf,
} from "../protocol/solana-networks.js";
import { isObject } from "../protocol/words.js";
import type { RpcRegistry } from "../rpc/rpc.js";
import { svmHeld, svmSpendOf } from "./chain/ledger-reads.js";
import { TRANSACTION_VERSIONS } from "./exact/constants.js";
import type { SvmSettleContext } from "./exact/index.js";
import { signatureStatuses } from "./exact/rpc.js";

type SolanaOptions = Pick<
  SvmSettleContext,
  "keys" | "maxFeeLamports" | "smartWallets" | "confirmTimeoutMs" | "pollMs" | "watchSubmitted"
> &
  Partial<Pick<SvmSettleContext, "answers" | "metrics">> & {
    /** Told when a hold ends (a shared store updates its copy). */
    readonly onFree?: ((key: string, landedIn?: bigint) => void) | undefined;
  };

export class SvmFamily implements ChainFamily {
  readonly name = "svm";
  /** The fee payers' addresses. */
  readonly feePayers: readonly string[];
  /** What payers have in flight with us on Solana. */
  readonly inflight: InFlightLedger;
  readonly #answers: Answers;
  #turn = 0;
  #offerTurn = 0;

  constructor(
    private readonly rpc: RpcRegistry,
    private readonly journal: SettlementStore,
    private readonly throttle: PayerThrottle,
    private readonly options: SolanaOptions,
  ) {
    this.#answers = options.answers ?? new Answers(journal);
    this.feePayers = [...new Set(options.keys.map((key) => key.address))];
    this.inflight = new InFlightLedger({ onFree: options.onFree });
  }

  /** Solana networks, in either x402 version's form. */
  claims(network: string): boolean {
    return looksSolana(network);
  }

  /** Counts a Solana settlement a previous process left unsettled; false for other entries. */
  seed(entry: JournalEntry): boolean {
    const svm = svmSpendOf(entry);
    if (svm) this.inflight.seed(entry.key, [svmHeld(svm.spend)], [svm.signature]);
    return svm !== undefined;
  }

  verify(request: PaymentRequest): Promise<VerifyResult> {
    return this.#run(request, "verify", (exact, ctx) => exact.verifyExactSvm(ctx, request));
  }

  settle(request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult> {
    return this.#run(request, "settle", (exact, ctx) =>
      exact.settleExactSvm(ctx, request, waitUntil),
    );
  }

  /** Routes, then runs the scheme; what verify would refuse (an unserved cluster) is said first. */
  async #run<R extends VerifyResult | SettleResult>(
    request: PaymentRequest,
    op: "verify" | "settle",
    run: (exact: typeof import("./exact/index.js"), ctx: SvmSettleContext) => Promise<R>,
  ): Promise<R> {
    const call = async (ctx: SvmSettleContext) => run(await import("./exact/index.js"), ctx);
    const via = (ctx: SvmSettleContext) => this.rpc.solanaVia(ctx.network);
    return runRouted(request, op, await this.#route(request), call, via);
  }

  /** The served clusters' kinds, each naming one fee payer in turn (none without a fee payer). */
  async supported(): Promise<Supported> {
    const kinds: SupportedKind[] = [];
    if (this.feePayers.length > 0) {
      for (const network of await this.rpc.servedSolanaNetworks()) {
        const feePayer = this.feePayers[this.#turn++ % this.feePayers.length] as string;
        const extra = { feePayer, transactionVersions: [...TRANSACTION_VERSIONS] };
        // As the reference says it when its smart-wallet path is on (x402 v2: v1 has none).
        const features = this.options.smartWallets
          ? { features: { smartWalletSupported: true } }
          : {};
        const v1Name = solanaCluster(network)?.v1Name;
        if (v1Name) kinds.push({ x402Version: 1, scheme: "exact", network: v1Name, extra });
        kinds.push({ x402Version: 2, scheme: "exact", network, extra: { ...extra, ...features } });
      }
    }
    return { kinds, extensions: [], signers: signersUnder("solana:*", this.feePayers) };
  }

  /** Landed without error, or not failed and still able to land. */
  async stillOnChain(request: PaymentRequest, signature: string): Promise<boolean> {
    const routed = await this.#route(request);
    if (!routed.ok) return false;
    const [status] = await signatureStatuses(routed.target.client, [signature], true);
    return status ? status.err === null : false;
  }

  /** An `exact` offer on a served cluster, given our fee payer (naming another's: left out). */
  async complete(offered: Offer, defaultTimeout: number) {
    const feePayers = this.feePayers;
    if (offered.scheme !== "exact" || feePayers.length === 0) return undefined;
    const network = solanaNetworkOf(offered.network, 1) ?? solanaNetworkOf(offered.network, 2);
    const served = await this.rpc.servedSolanaNetworks();
    if (network === undefined || !served.includes(network)) return undefined;
    const { asset, payTo, amount } = offered;
    if (!isSolanaAddress(asset) || !isSolanaAddress(payTo)) return undefined;
    if (typeof amount !== "string" || !/^\d+$/.test(amount)) return undefined;
    const extra: Record<string, unknown> = isObject(offered.extra) ? { ...offered.extra } : {};
    if (extra.feePayer === undefined) {
      extra.feePayer = feePayers[this.#offerTurn++ % feePayers.length];
    } else if (typeof extra.feePayer !== "string" || !feePayers.includes(extra.feePayer)) {
      return undefined;
    }
    return { ...offered, network, maxTimeoutSeconds: timeoutOf(offered, defaultTimeout), extra };
  }

  /** The `exact` scheme, through a configured RPC of the cluster. */
  async #route(request: PaymentRequest): Promise<Routed<SvmSettleContext>> {
    const { requirements, x402Version } = request;
    if (requirements.scheme !== "exact") {
      const why = `scheme "${requirements.scheme}" is not supported on Solana; "exact" is`;
      return failed("unsupported_scheme", why);
    }
    const network = solanaNetworkOf(requirements.network, x402Version);
    if (network === undefined) {
      const hint =
        x402Version === 1
          ? "; v1 names are solana, solana-devnet and solana-testnet"
          : "; x402 v2 names Solana clusters solana:<first 32 characters of the genesis hash>";
      const why = `"${requirements.network}" is not a Solana network of x402 v${x402Version}${hint}`;
      return failed("unsupported_network", why);
    }
    return routedTo(() => this.#context(network, requirements.network));
  }

  async #context(network: string, named: string = network): Promise<SvmSettleContext> {
    return {
      ...this.options,
      client: await this.rpc.solanaClient(network, named),
      network,
      feePayers: this.feePayers,
      journal: this.journal,
      answers: this.#answers,
      ledger: this.inflight,
      throttle: this.throttle,
    };
  }

  /** Solana settlements are journaled on a `solana:<genesis hash>` network. */
  owns(entry: JournalEntry): boolean {
    return namespaceOf(entry.network) === "solana";
  }

  async observe(entry: JournalEntry): Promise<Observed> {
    const { network } = entry;
    const ctx = await this.#context(network);
    const signature = entry.hashes.at(-1) as string;
    const [status] = await signatureStatuses(ctx.client, [signature], true);
    if (!status) return { network, onChain: "unknown", transaction: signature };
    let onChain: Observed["onChain"] = !status.confirmed
      ? "pending"
      : status.err === null
        ? "mined"
        : "failed";
    // A smart wallet's transaction can land and pay nothing: one not yet seen to pay is read back.
    if (onChain === "mined" && !isAnswered(entry.state) && entry.state !== "landed") {
      const { landedPaid } = await import("./exact/follow-settlement.js");
      const paid = await landedPaid(ctx, entry, signature);
      onChain = paid === "paid" ? "mined" : paid === "unpaid" ? "failed" : "unknown";
    }
    return { network, onChain, transaction: signature, block: String(status.slot) };
  }

  /** An `exact` payment moves `requirements.amount` of the mint: the transfer must be exactly it. */
  moves(request: PaymentRequest): Moved | undefined {
    const network = solanaNetworkOf(request.requirements.network, request.x402Version);
    const moved = requiredAmount(request);
    if (request.requirements.scheme !== "exact" || network === undefined || !moved)
      return undefined;
    return { ...moved, network, asset: request.requirements.asset };
  }

  /** A Solana payment's key names the fee payer's signature, which our fee payer's key remakes. */
  async parties(request: PaymentRequest) {
    const { svmParties } = await import("./exact/settlement-key.js");
    return svmParties(request.payload.transaction);
  }

  async settlementKey(request: PaymentRequest): Promise<SettlementKey> {
    const network = solanaNetworkOf(request.requirements.network, request.x402Version);
    if (network === undefined) {
      return { ok: false, why: `"${request.requirements.network}" is not a Solana network` };
    }
    const { svmSettlementKey } = await import("./exact/settlement-key.js");
    return svmSettlementKey(network, request.payload.transaction, this.options.keys);
  }

  async follow(entry: JournalEntry, may: MaySend): Promise<Followed> {
    const { network } = entry;
    const { followSvmSettlement } = await import("./exact/follow-settlement.js");
    return followSvmSettlement(await this.#context(network), entry, may);
  }
}
