/**
 * The facilitator as the CLI, the HTTP server and library users make it: the core with its chain
 * families registered (Solana, then EVM for every other network), one RPC registry, one store
 * (in memory unless given one) and one payer throttle shared by both families.
 */
import type { LocalAccount } from "viem";
import type { CatalogueBounds } from "./bazaar/catalogue.js";
import { Discovery } from "./bazaar/discovery.js";
import { answerAccepts } from "./core/accepts.js";
import { AmountFloor, type MinAmount } from "./core/amount-floor.js";
import { Answers } from "./core/answers.js";
import { FacilitatorCore } from "./core/facilitator.js";
import { SettlementRate } from "./core/settle-rate.js";
import type { SettlementStore } from "./core/store.js";
import { PayerThrottle } from "./core/throttle.js";
import type { DenyList } from "./deny-list/deny-list.js";
import { EvmFamily } from "./evm/family.js";
import type { EvmOptions } from "./evm/options.js";
import { type RpcOptions, RpcRegistry } from "./rpc/rpc.js";
import { Journal } from "./store/journal.js";
import type { SvmFeePayer } from "./svm/chain/keys.js";
import type { SmartWalletOptions } from "./svm/exact/smart-wallet.js";
import { SvmFamily } from "./svm/family.js";

export type { SupportedKind, SupportedResponse } from "./core/facilitator.js";

export interface FacilitatorOptions
  extends Omit<RpcOptions, "metrics">,
    Omit<EvmOptions, "signers" | "onFree"> {
  /** The settlement account. Without any, verify works and settle answers settlement_failed. */
  readonly signer?: LocalAccount | undefined;
  /** Several settlement accounts, used in turn (each with its own nonce lane). */
  readonly signers?: readonly LocalAccount[] | undefined;
  /** Solana fee payers: `exact` payments naming one (`extra.feePayer`) are served here. */
  readonly svmFeePayers?: readonly SvmFeePayer[] | undefined;
  /** The most lamports one Solana settlement may cost the fee payer (default 150,000). */
  readonly svmMaxFeeLamports?: bigint | undefined;
  /** Solana payments from smart wallets (svm/exact/smart-wallet.ts), within these; off if unset. */
  readonly svmSmartWallets?: SmartWalletOptions | undefined;
  /** Where settlements are written down before broadcast (default: in memory only). */
  readonly journal?: SettlementStore | undefined;
  /** Reverts charged to one payer within the window before its settles wait (default 3)... */
  readonly payerRevertLimit?: number | undefined;
  /** ...and that window in milliseconds (default 10 minutes). */
  readonly payerRevertWindowMs?: number | undefined;
  /** The bazaar catalogue's bounds (bazaar/catalogue.ts has the defaults). */
  readonly catalogueBounds?: Partial<CatalogueBounds> | undefined;
  /** Payers and payees refused before any chain call (deny-list/deny-list.ts); none by default. */
  readonly denyList?: DenyList | undefined;
  /** The least each asset's payments may move (core/amount-floor.ts); 0 is refused whatever. */
  readonly minAmounts?: readonly MinAmount[] | undefined;
  /** Settlements a minute per payer and payee (core/settle-rate.ts); off here, on in the CLI. */
  readonly ratePerPayer?: number | undefined;
}

export class Facilitator extends FacilitatorCore {
  readonly rpc: RpcRegistry;
  readonly evm: EvmFamily;
  readonly svm: SvmFamily;

  constructor(options: FacilitatorOptions = {}) {
    const rpc = new RpcRegistry(options);
    const journal: SettlementStore = options.journal ?? new Journal();
    // A store shared by replicas keeps its copy of every hold in step with the ledgers here.
    const onFree = journal.releaseShared
      ? (key: string, landedIn?: bigint) => void journal.releaseShared?.(key, landedIn)
      : undefined;
    const throttle = new PayerThrottle({
      limit: options.payerRevertLimit,
      windowMs: options.payerRevertWindowMs,
      onCharge: journal.chargeRevert
        ? (chainId, payer) => void journal.chargeRevert?.(chainId, payer)
        : undefined,
    });
    const signers = [...(options.signer ? [options.signer] : []), ...(options.signers ?? [])];
    const answers = new Answers(journal);
    const evm = new EvmFamily(rpc, journal, throttle, { ...options, signers, onFree, answers });
    const svm = new SvmFamily(rpc, journal, throttle, {
      answers,
      keys: options.svmFeePayers ?? [],
      onFree,
      maxFeeLamports: options.svmMaxFeeLamports,
      smartWallets: options.svmSmartWallets,
      confirmTimeoutMs: options.confirmTimeoutMs ?? 60_000,
      pollMs: options.receiptPollMs ?? 250,
      watchSubmitted: options.watchSubmitted ?? false,
      metrics: options.metrics,
    });
    // Reverts and other waste other replicas charge count here too.
    journal.onRevertElsewhere?.((chainId, payer, at, waste) =>
      waste ? evm.gasAtRisk.record(chainId, waste, at) : throttle.record(chainId, payer, at),
    );
    // Bazaar discovery, in the store's catalogue, when it keeps one (both of ours do).
    const discovery = journal.catalogue
      ? new Discovery(journal.catalogue, journal, { bounds: options.catalogueBounds })
      : undefined;
    super([svm, evm], journal, answers, discovery);
    this.denyList = options.denyList;
    this.amountFloor = new AmountFloor(options.minAmounts);
    if (options.ratePerPayer) this.settleRate = new SettlementRate(options.ratePerPayer);
    this.rpc = rpc;
    this.evm = evm;
    this.svm = svm;
  }

  /** POST /accepts: the offers this facilitator can settle, completed for a buyer. */
  accepts(body: unknown) {
    return answerAccepts(this.families, body);
  }

  /** The EVM settlement accounts. */
  get signers() {
    return this.evm.signers;
  }

  /** The first EVM settlement account, if any. */
  get signerAddress(): string | undefined {
    return this.evm.signers.addresses[0];
  }

  /** What payers have in flight with us on EVM chains. */
  get inflight() {
    return this.evm.inflight;
  }

  /** Wasted gas, per payer, asset and EVM chain. */
  get gasAtRisk() {
    return this.evm.gasAtRisk;
  }

  /** The Solana family (its fee payers, its in-flight ledger). */
  get solana(): SvmFamily {
    return this.svm;
  }

  /** The Solana fee payers' addresses. */
  get svmFeePayers(): readonly string[] {
    return this.svm.feePayers;
  }
}
