/**
 * The facilitator: routes a parsed payment request to the module for its (version, scheme,
 * network, payload shape) and owns what every method shares: the RPC, the signers, the journal,
 * the clock, and turning anything thrown into a Failure.
 */
import { type Address, type Hex, isAddressEqual, type LocalAccount } from "viem";
import { feeCapFor } from "../evm/chain/fees.js";
import { GasAtRisk } from "../evm/chain/gas-at-risk.js";
import { type GasBoundName, type GasBounds, gasBoundsFor } from "../evm/chain/gas-bounds.js";
import { InFlight } from "../evm/chain/inflight.js";
import { SignerPool } from "../evm/chain/signers.js";
import {
  EXACT,
  EXACT_EVM_EXTENSIONS,
  EXACT_EVM_TRANSFER_METHODS,
  exactEvmMethod,
} from "../evm/exact/index.js";
import { UPTO, uptoEvmMethod } from "../evm/upto/index.js";
import { type Failure, failure } from "../protocol/errors.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name, knownNetwork } from "../protocol/networks.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { WaitUntil } from "../protocol/schemas.js";
import { Journal } from "../store/journal.js";
import type { SvmFeePayer } from "../svm/chain/keys.js";
import { isSolanaRequest, SolanaPayments } from "../svm/family.js";
import { settleOnce } from "./idempotency.js";
import { type RpcOptions, RpcRegistry } from "./rpc.js";
import type { PaymentMethod, SchemeContext, SettleResult, VerifyResult } from "./scheme.js";
import type { SettlementStore } from "./store.js";
import { PayerThrottle } from "./throttle.js";
import { failureOfThrown, namingEndpoint } from "./thrown.js";

export interface FacilitatorOptions extends RpcOptions {
  /** The settlement account. Without any, verify works and settle answers settlement_failed. */
  readonly signer?: LocalAccount | undefined;
  /**
   * Solana fee payers: the `exact` payments on Solana they are named in (`extra.feePayer`) are
   * verified here. Without any, /supported lists no Solana kind.
   */
  readonly svmFeePayers?: readonly SvmFeePayer[] | undefined;
  /** The most lamports one Solana settlement may cost the fee payer (default 150,000). */
  readonly svmMaxFeeLamports?: bigint | undefined;
  /** Several settlement accounts, used in turn (each with its own nonce lane). */
  readonly signers?: readonly LocalAccount[] | undefined;
  /**
   * Where settlements are written down before they are broadcast (default: in memory only; the
   * CLI and serve keep a file, or PostgreSQL for several replicas).
   */
  readonly journal?: SettlementStore | undefined;
  /**
   * Most a settlement may cost, in wei of the chain's native token, for every chain (default: a
   * per-network cap, see networks.ts)...
   */
  readonly maxFeeWei?: bigint | undefined;
  /** ...or per chain id, which wins. */
  readonly maxFeeWeiByChain?: Readonly<Record<number, bigint>> | undefined;
  /** The most gas each kind of settlement transaction may use (default: chain/gas-bounds.ts). */
  readonly gasBounds?:
    | {
        readonly all?: Partial<Record<GasBoundName, bigint>> | undefined;
        readonly byChain?: Readonly<Record<number, Partial<Record<GasBoundName, bigint>>>>;
      }
    | undefined;
  /** Wasted gas per chain and hour before payers without history wait (default 500,000)... */
  readonly wastedGasBudget?: bigint | undefined;
  /** ...or per chain id, which wins. */
  readonly wastedGasBudgetByChain?: Readonly<Record<number, bigint>> | undefined;
  /** Per chain id, the only assets settled there (default: any). */
  readonly allowedAssets?: Readonly<Record<number, readonly Address[]>> | undefined;
  /** Replace a transaction stuck in the mempool this long with a higher fee (default 15 s). */
  readonly replaceAfterMs?: number | undefined;
  /** How long `confirmed` waits for a receipt (default 60 s). */
  readonly confirmTimeoutMs?: number | undefined;
  /** Blocks a receipt must be deep before `confirmed` answers (default 1: mined). */
  readonly confirmations?: number | undefined;
  /**
   * Watch `submitted` settlements land in the background, to end their payers' reservations and
   * charge reverts (a long-running server; default false: a CLI process exits after answering).
   */
  readonly watchSubmitted?: boolean | undefined;
  /**
   * Factories whose undeployed (ERC-6492) wallets may pay: the settlement deploys the wallet.
   * None by default, as the reference: a factory runs code we did not write.
   */
  readonly erc6492Factories?: readonly Address[] | undefined;
  /** Reverts charged to one payer within the window before its settles wait (default 3)... */
  readonly payerRevertLimit?: number | undefined;
  /** ...and that window in milliseconds (default 10 minutes). */
  readonly payerRevertWindowMs?: number | undefined;
  /** Receipt polling interval (default 250 ms). */
  readonly receiptPollMs?: number | undefined;
  /** Unix seconds; tests may pin it. */
  readonly now?: (() => number) | undefined;
}

export interface SupportedKind {
  readonly x402Version: 1 | 2;
  readonly scheme: string;
  readonly network: string;
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface SupportedResponse {
  readonly kinds: SupportedKind[];
  readonly extensions: string[];
  readonly signers: Record<string, string[]>;
}

type Routed =
  | { ok: true; method: PaymentMethod; ctx: SchemeContext }
  | { ok: false; failure: Failure };

export class Facilitator {
  readonly rpc: RpcRegistry;
  readonly signers: SignerPool;
  readonly journal: SettlementStore;
  /** What payers have in flight with us, across chains. */
  readonly inflight: InFlight;
  /** Payments on Solana clusters. */
  readonly solana: SolanaPayments;
  /** Wasted gas, per payer, asset and chain. */
  readonly gasAtRisk: GasAtRisk;
  readonly #throttle: PayerThrottle;
  readonly #options: FacilitatorOptions;
  readonly #gasBounds = new Map<number, GasBounds>();
  readonly #allowedAssets = new Map<number, ReadonlySet<string>>();

  constructor(options: FacilitatorOptions = {}) {
    this.#options = options;
    this.rpc = new RpcRegistry(options);
    const accounts = [...(options.signer ? [options.signer] : []), ...(options.signers ?? [])];
    this.signers = new SignerPool(accounts);
    this.journal = options.journal ?? new Journal();
    const journal = this.journal;
    // A store shared by replicas keeps its copy of every hold in step with the ledgers here.
    const onFree = journal.releaseShared
      ? (key: string, landedIn?: bigint) => void journal.releaseShared?.(key, landedIn)
      : undefined;
    this.inflight = new InFlight({ onFree });
    this.#throttle = new PayerThrottle({
      limit: options.payerRevertLimit,
      windowMs: options.payerRevertWindowMs,
      onCharge: journal.chargeRevert
        ? (chainId, payer) => void journal.chargeRevert?.(chainId, payer)
        : undefined,
    });
    this.solana = new SolanaPayments(this.rpc, journal, this.#throttle, {
      keys: options.svmFeePayers ?? [],
      onFree,
      maxFeeLamports: options.svmMaxFeeLamports,
      confirmTimeoutMs: options.confirmTimeoutMs ?? 60_000,
      pollMs: options.receiptPollMs ?? 250,
      watchSubmitted: options.watchSubmitted ?? false,
      metrics: options.metrics,
    });
    for (const [chainId, assets] of Object.entries(options.allowedAssets ?? {})) {
      this.#allowedAssets.set(Number(chainId), new Set(assets.map((a) => a.toLowerCase())));
    }
    this.gasAtRisk = new GasAtRisk(this.#throttle, {
      budgetGas: options.wastedGasBudget,
      budgetGasByChain: options.wastedGasBudgetByChain,
      trusted: (chainId, asset) => this.#trusted(chainId, asset),
      settledBefore: journal.settledBefore?.bind(journal),
      onWaste: journal.chargeRevert
        ? (chainId, waste) => void journal.chargeRevert?.(chainId, waste.payer, waste)
        : undefined,
    });
    // Reverts and other waste other replicas charge count here too.
    journal.onRevertElsewhere?.((chainId, payer, at, waste) =>
      waste ? this.gasAtRisk.record(chainId, waste, at) : this.#throttle.record(chainId, payer, at),
    );
    // Settlements a previous process left unsettled still count against their payers' balances.
    for (const entry of this.journal.unsettled()) {
      if (this.solana.seed(entry) || !entry.expect) continue;
      const { token, from, value } = entry.expect;
      this.inflight.seed(entry.chainId, entry.key, [{ token, owner: from, amount: BigInt(value) }]);
    }
  }

  /** The most a settlement on `chainId` may cost, in wei. */
  feeCapWei(chainId: number): bigint {
    return feeCapFor(chainId, this.#options).wei;
  }

  /** The most gas each kind of settlement transaction may use on `chainId`. */
  gasBounds(chainId: number): GasBounds {
    let bounds = this.#gasBounds.get(chainId);
    if (!bounds) {
      bounds = gasBoundsFor(chainId, this.#options.gasBounds);
      this.#gasBounds.set(chainId, bounds);
    }
    return bounds;
  }

  /** The assets the operator listed for `chainId`, if it did. */
  allowedAssets(chainId: number): ReadonlySet<string> | undefined {
    return this.#allowedAssets.get(chainId);
  }

  /** An asset wasted gas is not held against as one we never settled: USDC, the listed ones. */
  #trusted(chainId: number, asset: string): boolean {
    const usdc = knownNetwork(chainId)?.usdc?.address;
    if (usdc && isAddressEqual(usdc, asset as Address)) return true;
    return this.#allowedAssets.get(chainId)?.has(asset.toLowerCase()) ?? false;
  }

  /** The Solana fee payers' addresses. */
  get svmFeePayers(): readonly string[] {
    return this.solana.feePayers;
  }

  /** The first settlement account, if any. */
  get signerAddress(): string | undefined {
    return this.signers.addresses[0];
  }

  async verify(request: PaymentRequest): Promise<VerifyResult> {
    if (isSolanaRequest(request) && isKnownScheme(request)) return this.solana.verify(request);
    const routed = await this.#route(request);
    if (!routed.ok) return { ok: false, failure: routed.failure };
    let result: VerifyResult;
    try {
      result = await routed.method.verify(routed.ctx, request);
    } catch (error) {
      result = { ok: false, failure: failureOfThrown(error, "verify") };
    }
    if (!result.ok && result.failure.code === "chain_unavailable") this.#chainTrouble(request);
    return namingEndpoint(result, request.requirements.network, this.rpc.via(routed.ctx.chainId));
  }

  /** After an outage the node may be another (restarted, reset): re-read nonces from it. */
  #chainTrouble(request: PaymentRequest): void {
    const chainId = chainIdOf(request.requirements.network, request.x402Version);
    if (typeof chainId === "number") for (const lane of this.signers.lanes) lane.forget(chainId);
  }

  async settle(request: PaymentRequest, waitUntil?: WaitUntil): Promise<SettleResult> {
    if (isSolanaRequest(request) && isKnownScheme(request)) {
      return this.solana.settle(request, waitUntil);
    }
    let result: SettleResult;
    try {
      result = await settleOnce(
        this.journal,
        request,
        () => this.#settle(request, waitUntil),
        (hash) => this.#stillOnChain(request, hash),
      );
    } catch (error) {
      result = { ok: false, failure: failureOfThrown(error, "settle") };
    }
    if (!result.ok && result.failure.code === "chain_unavailable") {
      this.#chainTrouble(request);
      // An unreachable chain during settle is a 500: the settlement, not the request, failed.
      return { ...result, failure: { ...result.failure, status: 500 } };
    }
    return result;
  }

  /** Mined successfully, or still waiting in the node's pool. */
  async #stillOnChain(request: PaymentRequest, hash: string): Promise<boolean> {
    const chainId = chainIdOf(request.requirements.network, request.x402Version);
    if (typeof chainId !== "number") return false;
    const client = await this.rpc.client(chainId, request.requirements.network);
    const txHash = hash as Hex;
    const receipt = await client.getTransactionReceipt({ hash: txHash }).catch(() => undefined);
    if (receipt) return receipt.status === "success";
    return (await client.getTransaction({ hash: txHash }).catch(() => undefined)) !== undefined;
  }

  async #settle(request: PaymentRequest, waitUntil?: WaitUntil): Promise<SettleResult> {
    const routed = await this.#route(request);
    if (!routed.ok) return { ok: false, failure: routed.failure };
    let result: SettleResult;
    try {
      result = await routed.method.settle(
        routed.ctx,
        request,
        waitUntil ?? request.waitUntil ?? "confirmed",
      );
    } catch (error) {
      result = { ok: false, failure: failureOfThrown(error, "settle") };
    }
    return namingEndpoint(result, request.requirements.network, this.rpc.via(routed.ctx.chainId));
  }

  /**
   * The kinds this instance serves, exactly those verify and settle accept: the configured
   * chains, plus the well-known ones behind public RPCs when those are in use.
   */
  async supported(): Promise<SupportedResponse> {
    const kinds: SupportedKind[] = [];
    for (const chainId of await this.rpc.servedChainIds()) {
      const v1Name = knownNetwork(chainId)?.v1Name;
      if (v1Name) kinds.push({ x402Version: 1, scheme: EXACT, network: v1Name });
      kinds.push({
        x402Version: 2,
        scheme: EXACT,
        network: caip2(chainId),
        extra: { assetTransferMethods: EXACT_EVM_TRANSFER_METHODS },
      });
      // upto: the witness must name the facilitator that settles; each kind names one signer,
      // in turn, as the reference names one of its signers.
      const facilitatorAddress = this.#nextUptoSigner();
      if (facilitatorAddress) {
        kinds.push({
          x402Version: 2,
          scheme: UPTO,
          network: caip2(chainId),
          extra: { facilitatorAddress },
        });
      }
    }
    kinds.push(...(await this.solana.kinds()));
    const feePayers = this.solana.feePayers;
    const signers = this.signers.addresses;
    return {
      kinds,
      extensions: EXACT_EVM_EXTENSIONS,
      signers: {
        ...(signers.length > 0 ? { "eip155:*": signers } : {}),
        ...(feePayers.length > 0 ? { "solana:*": [...feePayers] } : {}),
      },
    };
  }

  #uptoTurn = 0;

  #nextUptoSigner(): string | undefined {
    const addresses = this.signers.addresses;
    if (addresses.length === 0) return undefined;
    return addresses[this.#uptoTurn++ % addresses.length];
  }

  async #route(request: PaymentRequest): Promise<Routed> {
    const { requirements, x402Version } = request;
    if (requirements.scheme !== EXACT && requirements.scheme !== UPTO) {
      return {
        ok: false,
        failure: failure(
          "unsupported_scheme",
          `scheme "${requirements.scheme}" is not supported; "exact" and "upto" are`,
        ),
      };
    }
    const chainId = chainIdOf(requirements.network, x402Version);
    if (typeof chainId !== "number") return { ok: false, failure: chainId };

    const method = requirements.scheme === UPTO ? uptoEvmMethod(request) : exactEvmMethod(request);
    if ("code" in method) return { ok: false, failure: method };

    try {
      const client = await this.rpc.client(chainId, requirements.network);
      const ctx: SchemeContext = {
        client,
        chainId,
        signers: this.signers,
        journal: this.journal,
        inflight: this.inflight,
        throttle: this.#throttle,
        gasAtRisk: this.gasAtRisk,
        gasBounds: this.gasBounds(chainId),
        allowedAssets: this.#allowedAssets.get(chainId),
        feeCapWei: this.feeCapWei(chainId),
        replaceAfterMs: this.#options.replaceAfterMs ?? 15_000,
        now: this.#options.now ?? (() => Date.now() / 1000),
        confirmTimeoutMs: this.#options.confirmTimeoutMs ?? 60_000,
        confirmations: Math.max(1, this.#options.confirmations ?? 1),
        watchSubmitted: this.#options.watchSubmitted ?? false,
        erc6492Factories: this.#options.erc6492Factories ?? [],
        receiptPollMs: this.#options.receiptPollMs ?? 250,
        metrics: this.#options.metrics,
      };
      return { ok: true, method, ctx };
    } catch (error) {
      return { ok: false, failure: failureOfThrown(error, "verify") };
    }
  }
}

/** A scheme some network serves; any other is refused the same way for every network. */
function isKnownScheme(request: PaymentRequest): boolean {
  return request.requirements.scheme === EXACT || request.requirements.scheme === UPTO;
}

/** v1 speaks network names, v2 CAIP-2 ids; each is held to its own form. */
function chainIdOf(network: string, x402Version: 1 | 2): number | Failure {
  if (x402Version === 1) {
    const id = chainIdOfV1Name(network);
    if (id !== undefined) return id;
    const hint =
      chainIdOfCaip2(network) !== undefined ? "; v1 uses names such as base-sepolia" : "";
    return failure("unsupported_network", `"${network}" is not a known x402 v1 network${hint}`);
  }
  const id = chainIdOfCaip2(network);
  if (id !== undefined) return id;
  const hint =
    chainIdOfV1Name(network) !== undefined
      ? ` (for ${network}: eip155:${chainIdOfV1Name(network)})`
      : "";
  return failure(
    "unsupported_network",
    `"${network}" is not supported: x402 v2 networks are CAIP-2 ids such as eip155:84532${hint}`,
  );
}
