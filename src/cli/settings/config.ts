/**
 * Configuration for the CLI: every setting of settings.ts a command's core needs, each from its
 * flag, then the environment, then the optional JSON config file (setting-resolver.ts). The
 * settlement key is read from the environment or a file, never from a flag's value, and is never
 * echoed, not even in an error message.
 */
import type { Address, Hex } from "viem";
import type { MinAmount } from "../../core/amount-floor.js";
import type { EvmScheme } from "../../evm/scheme.js";
import { EVM_SCHEMES, type SchemeOptions } from "../../evm/schemes.js";
import type { SvmFeePayer } from "../../svm/chain/keys.js";
import { DEFAULT_SMART_WALLET_PROGRAMS } from "../../svm/exact/constants.js";
import type { SmartWalletOptions } from "../../svm/exact/smart-wallet.js";
import { readConfigFile } from "./config-file.js";
import { keyLoaders } from "./config-keys.js";
import type { SettlementLimits } from "./config-limits.js";
import { usage } from "./setting-parsers.js";
import { resolvePerNetwork, resolveSetting, type SettingSources } from "./setting-resolver.js";
import type { ValueSetting } from "./setting-rows.js";
import { CONFIG_KEYS, SETTINGS, type SettingFlags } from "./settings.js";

/** The flags a command may have of settings.ts's settings (a command has those it offers). */
export type ConfigFlags = SettingFlags & Readonly<Record<string, unknown>>;

export interface CliConfig {
  readonly rpcUrls: string[];
  /**
   * The built-in public RPCs for well-known chains without a configured URL: true beside the
   * configured URLs too, false never; undefined: only when no URL is configured.
   */
  readonly publicRpcs?: boolean | undefined;
  /** Most JSON-RPC calls in one batch request (undefined: 1,000, lowered by a refusal). */
  readonly rpcBatchLimit?: number | undefined;
  /** Wallet factories whose undeployed (ERC-6492) wallets may pay. */
  readonly erc6492Factories: Address[];
  /** The first settlement key; loaded only when the command needs to sign. */
  readonly loadPrivateKey: () => Hex | undefined;
  /** Every settlement key (a key file may hold one per line), used in turn. */
  readonly loadPrivateKeys: () => Hex[];
  /**
   * The batch-settlement receiver authorizer's key (one key; it signs claims and refunds, never
   * a transaction), or undefined when none is configured. See receiverAuthorizerOf.
   */
  readonly loadReceiverAuthorizerKey: () => Hex | undefined;
  /** The Solana fee payers (verify needs their addresses too); none when no key is configured. */
  readonly loadSvmFeePayers: () => SvmFeePayer[];
  /** The most lamports one Solana settlement may cost the fee payer (undefined: the default). */
  readonly svmMaxFeeLamports?: bigint | undefined;
  /** Payments from Solana smart wallets, and their limits (undefined: not taken). */
  readonly svmSmartWallets?: SmartWalletOptions | undefined;
  readonly confirmTimeoutMs: number;
  /** serve: how long a stop lets requests in flight answer before answering them itself. */
  readonly shutdownTimeoutMs: number;
  readonly journalPath: string;
  /** A PostgreSQL URL: settlements live there, shared by replicas, instead of the journal file. */
  readonly storeUrl?: string | undefined;
  /** How long a replica's claims and signer leases outlive it in the store. */
  readonly storeLeaseMs?: number | undefined;
  /** PostgreSQL: final settlements older than this many days move to the archive (0: never). */
  readonly retainDays: number;
  /** Fee caps, gas bounds, the wasted-gas budget and the assets each network settles. */
  readonly limits: SettlementLimits;
  readonly replaceAfterMs: number;
  /** Blocks a receipt must be deep before a settle answers confirmed (1: mined). */
  readonly confirmations: number;
  /** Reverts charged to one payer within the window before its settles wait. */
  readonly payerRevertLimit?: number | undefined;
  readonly payerRevertWindowMs?: number | undefined;
  /** serve's /readyz: the native balance each signer needs on each chain (undefined: 1 wei). */
  readonly minSignerBalanceWei?: bigint | undefined;
  /** The schemes' own settings (EvmScheme.settings) by row name, as given or by default. */
  readonly schemes: Readonly<Record<string, unknown>>;
  /** The ERC-8021 builder code our EVM settlement transactions carry. */
  readonly builderCode?: string | undefined;
  /** The operator's deny list file (payers and payees refused before any chain call). */
  readonly denyList?: string | undefined;
  /** serve: requests a minute per client address without a named API key (undefined: off). */
  readonly ratePerClient?: number | undefined;
  /** The least each asset's payments may move (0 is refused whatever this says). */
  readonly minAmounts: MinAmount[];
  /** Settlements a minute per payer and per payee (0: off). */
  readonly ratePerPayer: number;
}

/**
 * The config file the flags or the environment name, read; then every setting from all three,
 * those of `schemes` too (a test registers its own schemes, as a library user does).
 */
export function loadConfig(
  flags: ConfigFlags,
  env: NodeJS.ProcessEnv = process.env,
  schemes: readonly EvmScheme[] = EVM_SCHEMES,
): CliConfig {
  const schemeKeys = schemes.flatMap((s) =>
    Object.values(s.settings?.rows ?? {}).map((r) => r.key),
  );
  const known = [...new Set([...CONFIG_KEYS, ...schemeKeys.filter((k) => k !== undefined)])];
  const file = readConfigFile(resolveSetting(SETTINGS.config, { flags, env }), env, known);
  const sources: SettingSources = { flags, env, file };
  const setting = <R extends ValueSetting>(row: R) => resolveSetting(row, sources);

  // In this order, so that of several mistakes the same one is reported first.
  const rpcUrls = setting(SETTINGS.rpcUrls);
  const publicRpcs = setting(SETTINGS.publicRpcs);
  const rpcBatchLimit = setting(SETTINGS.rpcBatchLimit);
  const confirmTimeoutMs = setting(SETTINGS.confirmTimeout);
  const shutdownTimeoutMs = setting(SETTINGS.shutdownTimeout);
  const keys = keyLoaders(sources);
  const journalPath = setting(SETTINGS.journal);
  const storeUrl = setting(SETTINGS.store);
  const storeLeaseMs = setting(SETTINGS.storeLease);
  const retainDays = setting(SETTINGS.retainDays);
  const svmMaxFeeLamports = setting(SETTINGS.svmMaxFeeLamports);
  const svmSmartWallets = smartWalletsOf(sources);
  const caps = resolvePerNetwork(SETTINGS.maxFee, sources);
  const budgets = resolvePerNetwork(SETTINGS.wastedGasBudget, sources);
  const limits: SettlementLimits = {
    maxFeeWei: caps.all,
    maxFeeWeiByChain: caps.byChain,
    gasBounds: setting(SETTINGS.gasBounds),
    wastedGasBudget: budgets.all,
    wastedGasBudgetByChain: budgets.byChain,
    allowedAssets: setting(SETTINGS.allowedAssets),
  };
  const replaceAfterMs = setting(SETTINGS.replaceAfter);
  const confirmations = setting(SETTINGS.confirmations);
  const payerRevertLimit = setting(SETTINGS.payerRevertLimit);
  const payerRevertWindowMs = setting(SETTINGS.payerRevertWindow);
  const minSignerBalanceWei = setting(SETTINGS.minSignerBalance);
  const schemeValues = valuesOf(schemes, sources);
  const erc6492Factories = setting(SETTINGS.erc6492Factories);
  const builderCode = setting(SETTINGS.builderCode);
  const denyList = setting(SETTINGS.denyList);
  const ratePerClient = setting(SETTINGS.ratePerClient);
  const minAmounts = setting(SETTINGS.minAmounts);
  const ratePerPayer = setting(SETTINGS.ratePerPayer);

  return {
    erc6492Factories,
    confirmations,
    payerRevertLimit,
    payerRevertWindowMs,
    rpcUrls,
    publicRpcs,
    rpcBatchLimit,
    ...keys,
    svmMaxFeeLamports,
    svmSmartWallets,
    confirmTimeoutMs,
    shutdownTimeoutMs,
    journalPath,
    storeUrl,
    storeLeaseMs,
    retainDays,
    limits,
    replaceAfterMs,
    minSignerBalanceWei,
    schemes: schemeValues,
    builderCode,
    denyList,
    ratePerClient,
    minAmounts,
    ratePerPayer,
  };
}

/** The smart-wallet settings, read only when they are switched on. */
function smartWalletsOf(sources: SettingSources): SmartWalletOptions | undefined {
  const setting = <R extends ValueSetting>(row: R) => resolveSetting(row, sources);
  const programs = setting(SETTINGS.svmSmartWalletPrograms);
  const maxComputeUnits = setting(SETTINGS.svmSmartWalletMaxComputeUnits);
  const maxPriorityFee = setting(SETTINGS.svmSmartWalletMaxPriorityFee);
  if (!setting(SETTINGS.svmSmartWallets)) return undefined;
  return {
    allowedPrograms: programs ?? DEFAULT_SMART_WALLET_PROGRAMS,
    maxComputeUnits,
    maxPriorityFeeMicroLamports: BigInt(maxPriorityFee),
  };
}

/** The value rows of the schemes' own settings, each from its flag, environment or config key. */
function valuesOf(
  schemes: readonly EvmScheme[],
  sources: SettingSources,
): Readonly<Record<string, unknown>> {
  const values: Record<string, unknown> = {};
  for (const scheme of schemes) {
    for (const [name, row] of Object.entries(scheme.settings?.rows ?? {})) {
      if (row.kind === "value")
        values[name] = resolveSetting({ ...row, parse: usage(row.parse) }, sources);
    }
  }
  return values;
}

/** The family's options the schemes' settings make, every scheme's together. */
export function schemeOptions(
  schemes: readonly EvmScheme[],
  values: Readonly<Record<string, unknown>>,
  run: { readonly server: boolean },
): Partial<SchemeOptions> {
  return Object.assign({}, ...schemes.map((scheme) => scheme.settings?.options(values, run) ?? {}));
}
