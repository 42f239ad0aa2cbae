/** The EVM family: routes payments to schemes and methods, owns what EVM settlements share. */
import type { Address, Hex } from "viem";
import { timeoutOf } from "../core/accepts.js";
import { requiredAmount } from "../core/amount-floor.js";
import { Answers } from "../core/answers.js";
import type {
  ChainFamily,
  Followed,
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
import type { JournalEntry, SettlementStore } from "../core/store.js";
import type { PayerThrottle } from "../core/throttle.js";
import { type Failure, failed, failure } from "../protocol/errors.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name, knownAsset } from "../protocol/networks.js";
import { type PaymentRequest, payerHint } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { RpcRegistry } from "../rpc/rpc.js";
import { evmEntry } from "./chain/entry.js";
import { feeCapFor } from "./chain/fees.js";
import { GasAtRisk } from "./chain/gas-at-risk.js";
import { gasBoundsFor } from "./chain/gas-bounds.js";
import { heldByTransfer } from "./chain/ledger-reads.js";
import { firstReceipt } from "./chain/receipts.js";
import { SignerPool } from "./chain/signers.js";
import type { EvmContext, PaymentMethod } from "./context.js";
import { followSettlement } from "./follow-settlement.js";
import type { EvmOptions } from "./options.js";
import type { EvmScheme, EvmSchemeHost } from "./scheme.js";
import { EVM_SCHEMES } from "./schemes.js";

type Target = { readonly method: PaymentMethod; readonly ctx: EvmContext };

export class EvmFamily implements ChainFamily {
  readonly name = "evm";
  readonly signers: SignerPool;
  readonly inflight: InFlightLedger;
  readonly gasAtRisk: GasAtRisk;
  readonly schemes: readonly EvmScheme[];
  readonly #allowedAssets = new Map<number, ReadonlySet<string>>();
  readonly #host: EvmSchemeHost;
  readonly #answers: Answers;
  #signerTurn = 0;

  constructor(
    private readonly rpc: RpcRegistry,
    private readonly journal: SettlementStore,
    private readonly throttle: PayerThrottle,
    private readonly options: EvmOptions = {},
  ) {
    this.schemes = options.schemes ?? EVM_SCHEMES;
    this.#answers = options.answers ?? new Answers(journal);
    this.signers = new SignerPool(options.signers ?? []);
    this.inflight = new InFlightLedger({ onFree: options.onFree });
    for (const [chainId, assets] of Object.entries(options.allowedAssets ?? {})) {
      this.#allowedAssets.set(Number(chainId), new Set(assets.map((a) => a.toLowerCase())));
    }
    const settlementsOf = journal.settlementsOf?.bind(journal);
    this.gasAtRisk = new GasAtRisk(throttle, {
      budgetGas: options.wastedGasBudget,
      budgetGasByChain: options.wastedGasBudgetByChain,
      trusted: (chainId, asset) => this.#trusted(chainId, asset),
      settlementsOf: settlementsOf && ((id, who, most) => settlementsOf(caip2(id), who, most)),
      onWaste: journal.chargeRevert
        ? (chainId, waste) => void journal.chargeRevert?.(chainId, waste.payer, waste)
        : undefined,
    });
    this.#host = {
      nextSigner: () => {
        const { addresses } = this.signers;
        return addresses.length > 0 ? addresses[this.#signerTurn++ % addresses.length] : undefined;
      },
      context: (chainId) => this.#context(chainId, caip2(chainId)),
      own: (part) => keep(this.#kept, `own:${part.name}`, () => part.make(options as never)),
    };
  }

  /** Every network no other family claims: its unsupported_network messages name CAIP-2 forms. */
  claims(_network: string): boolean {
    return true;
  }

  seed(entry: JournalEntry): boolean {
    const { expect } = evmEntry(entry);
    if (!expect) return false;
    this.inflight.seed(entry.key, heldByTransfer(chainIdOfEntry(entry), expect));
    return true;
  }

  owns(entry: JournalEntry): boolean {
    return chainIdOfCaip2(entry.network) !== undefined;
  }

  async follow(entry: JournalEntry, may: MaySend): Promise<Followed> {
    const chainId = chainIdOfEntry(entry);
    return followSettlement(await this.#context(chainId, entry.network), entry, may);
  }

  async observe(entry: JournalEntry): Promise<Observed> {
    const { network } = entry;
    const client = await this.rpc.client(chainIdOfEntry(entry), network);
    const receipt = await firstReceipt(client, [...entry.hashes].reverse());
    if (receipt) {
      const head = await client.getBlockNumber({ cacheTime: 0 });
      return {
        network,
        onChain: receipt.status === "success" ? "mined" : "failed",
        transaction: receipt.transactionHash,
        block: receipt.blockNumber.toString(),
        confirmations: Number(head - receipt.blockNumber + 1n),
      };
    }
    const newest = entry.hashes.at(-1) as Hex | undefined;
    const inPool = newest && (await client.getTransaction({ hash: newest }).catch(() => undefined));
    return { network, onChain: inPool ? "pending" : "unknown", transaction: newest };
  }

  /** For the deny list, from the payload: the scheme's own, else the transfer method's payer. */
  async parties(request: PaymentRequest) {
    const scheme = this.schemes.find((s) => s.name === request.requirements.scheme);
    if (scheme?.parties) return scheme.parties(request);
    const payer = payerHint({ payload: request.payload });
    return { payers: payer === undefined ? [] : [payer], payees: [] };
  }

  /** What the payment moves (core/amount-floor.ts): the scheme's reading, else `amount`. */
  moves(request: PaymentRequest, op: "verify" | "settle") {
    const scheme = this.schemes.find((s) => s.name === request.requirements.scheme);
    const chainId = chainIdOf(request.requirements.network, request.x402Version);
    if (!scheme || typeof chainId !== "number") return undefined;
    const moved = scheme.moves ? scheme.moves(request, op) : requiredAmount(request);
    if (moved === undefined || moved === "nothing") return moved;
    return { ...moved, network: caip2(chainId), asset: request.requirements.asset };
  }

  async settlementKey(request: PaymentRequest): Promise<SettlementKey> {
    const routed = await this.#route(request);
    if (!routed.ok) return { ok: false, why: routed.failure.message };
    const { method, ctx } = routed.target;
    const key = method.settlementKey(ctx, request);
    const why = `no settlement of its own follows from its ${method.name} payload`;
    return key ? { ok: true, key } : { ok: false, why };
  }

  /** Assets never held against as unknown: the network table's stablecoins, the listed ones. */
  #trusted(chainId: number, asset: string): boolean {
    if (knownAsset(chainId, asset)) return true;
    return this.#allowedAssets.get(chainId)?.has(asset.toLowerCase()) ?? false;
  }

  verify(request: PaymentRequest): Promise<VerifyResult> {
    return this.#run(request, "verify", (t) => t.method.verify(t.ctx, request));
  }

  settle(request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult> {
    return this.#run(request, "settle", (t) => t.method.settle(t.ctx, request, waitUntil));
  }

  async #run<R extends VerifyResult | SettleResult>(
    request: PaymentRequest,
    op: "verify" | "settle",
    call: (target: Target) => Promise<R>,
  ): Promise<R> {
    const via = ({ ctx }: Target) => this.rpc.via(ctx.chainId);
    const after = async ({ ctx }: Target, result: R) => {
      await this.rpc.confirmed(ctx.chainId);
      if (op === "verify" && !result.ok && result.failure.code === "chain_unavailable") {
        this.chainTrouble(request);
      }
    };
    return runRouted(request, op, await this.#route(request), call, via, after);
  }

  /** After an outage the node may be another (restarted, reset): re-read nonces from it. */
  chainTrouble(request: PaymentRequest): void {
    const chainId = chainIdOf(request.requirements.network, request.x402Version);
    if (typeof chainId === "number") for (const lane of this.signers.lanes) lane.reset(chainId);
  }

  /** Mined successfully, or still waiting in the node's pool. */
  async stillOnChain(request: PaymentRequest, transaction: string): Promise<boolean> {
    const chainId = chainIdOf(request.requirements.network, request.x402Version);
    if (typeof chainId !== "number") return false;
    const client = await this.rpc.client(chainId, request.requirements.network);
    const receipt = await firstReceipt(client, [transaction]);
    if (receipt) return receipt.status === "success";
    const inPool = await client.getTransaction({ hash: transaction as Hex }).catch(() => undefined);
    return inPool !== undefined;
  }

  /** The kinds served: exactly those verify and settle accept. */
  async supported(): Promise<Supported> {
    const kinds: SupportedKind[] = [];
    for (const chainId of await this.rpc.servedChainIds()) {
      for (const scheme of this.schemes) kinds.push(...scheme.kinds(chainId, this.#host));
    }
    return {
      kinds,
      extensions: [
        ...this.schemes.flatMap((scheme) => scheme.extensions ?? []),
        ...(this.options.builderCode ? ["builder-code"] : []),
      ],
      signers: signersUnder("eip155:*", this.signers.addresses),
    };
  }

  async complete(offer: Offer, defaultTimeout: number) {
    const scheme = this.schemes.find((s) => s.name === offer.scheme);
    if (!scheme?.complete) return undefined;
    const chainId = chainIdOfCaip2(offer.network) ?? chainIdOfV1Name(offer.network);
    if (chainId === undefined || !(await this.rpc.servedChainIds()).includes(chainId)) {
      return undefined;
    }
    const completed = await scheme.complete(offer, chainId, this.#host);
    const maxTimeoutSeconds = timeoutOf(offer, defaultTimeout);
    return completed && { ...completed, network: caip2(chainId), maxTimeoutSeconds };
  }

  async #route(request: PaymentRequest): Promise<Routed<Target>> {
    const { requirements, x402Version } = request;
    const scheme = this.schemes.find((s) => s.name === requirements.scheme);
    if (!scheme) {
      const names = this.schemes.map((s) => `"${s.name}"`);
      return failed(
        "unsupported_scheme",
        `scheme "${requirements.scheme}" is not supported; ${names.join(" and ")} ${names.length === 1 ? "is" : "are"}`,
      );
    }
    const chainId = chainIdOf(requirements.network, x402Version);
    if (typeof chainId !== "number") return failed(chainId);
    const method = scheme.method(request);
    if ("code" in method) return failed(method);
    return routedTo(async () => ({
      method,
      ctx: await this.#context(chainId, requirements.network),
    }));
  }

  /** Per chain, the context made for its current client. */
  readonly #contexts = new Map<number, EvmContext>();
  /** What schemes keep for the life of this family (EvmContext.kept). */
  readonly #kept = new Map<string, unknown>();

  async #context(chainId: number, network: string): Promise<EvmContext> {
    const client = await this.rpc.client(chainId, network);
    const known = this.#contexts.get(chainId);
    if (known?.client === client) return known;
    const { signers } = this;
    const options = this.options;
    let senders: readonly Address[] | undefined;
    const schemeGas = this.schemes.flatMap((s) => s.gas ?? []);
    const context: EvmContext = {
      signers: this.signers,
      journal: this.journal,
      inflight: this.inflight,
      throttle: this.throttle,
      gasAtRisk: this.gasAtRisk,
      answers: this.#answers,
      gasBounds: gasBoundsFor(chainId, options.gasBounds, schemeGas),
      allowedAssets: this.#allowedAssets.get(chainId),
      feeCapWei: feeCapFor(chainId, options).wei,
      kept: (name, make) => keep(this.#kept, name, make),
      own: (part) => this.#host.own(part),
      builderCode: options.builderCode,
      client,
      chainId,
      // Lazy: deriving an address costs a cold start ~15 ms, which the CLI's verify defers.
      get ownSenders() {
        const known = options.settlementAddresses;
        senders ??= [
          ...signers.addresses,
          ...((typeof known === "function" ? known() : known) ?? []),
        ];
        return senders;
      },
      replaceAfterMs: options.replaceAfterMs ?? 15_000,
      now: options.now ?? (() => Date.now() / 1000),
      confirmTimeoutMs: options.confirmTimeoutMs ?? 60_000,
      confirmations: Math.max(1, options.confirmations ?? 1),
      watchSubmitted: options.watchSubmitted ?? false,
      erc6492Factories: options.erc6492Factories ?? [],
      receiptPollMs: options.receiptPollMs ?? 250,
      metrics: options.metrics,
    };
    this.#contexts.set(chainId, context);
    return context;
  }
}

function chainIdOfEntry(entry: JournalEntry): number {
  return chainIdOfCaip2(entry.network) ?? 0;
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

/** What `make` made under `name`, made on first use and kept with the family's state. */
function keep<T>(kept: Map<string, unknown>, name: string, make: () => T): T {
  if (!kept.has(name)) kept.set(name, make());
  return kept.get(name) as T;
}
