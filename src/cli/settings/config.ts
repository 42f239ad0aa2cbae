/** The CLI's configuration; the settlement key never comes from a flag and is never echoed. */
import path from "node:path";
import type { ValueRow } from "../../core/scheme-settings.js";
import type { EvmScheme } from "../../evm/scheme.js";
import { EVM_SCHEMES, type SchemeOptions } from "../../evm/schemes.js";
import { isObject } from "../../protocol/words.js";
import { DEFAULT_SMART_WALLET_PROGRAMS } from "../../svm/exact/constants.js";
import type { SmartWalletOptions } from "../../svm/exact/smart-wallet.js";
import { readSmallFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import { keyLoaders } from "./config-keys.js";
import {
  type ConfigValues,
  resolvePerNetwork,
  resolveSetting,
  type SettingSources,
} from "./setting-resolver.js";
import { CONFIG_KEYS, SETTINGS, schemeRows } from "./settings.js";

/** A command's flags, as commander gives them: loadConfig reads the settings' by name. */
export type ConfigFlags = Readonly<Record<string, unknown>>;

/** The CLI's configuration: every setting resolved, the keys loaded only when called. */
export type CliConfig = ReturnType<typeof loadConfig>;

/** Every setting from flags, environment and config file, `schemes`' own too (tests pass theirs). */
export function loadConfig(
  flags: ConfigFlags,
  env: NodeJS.ProcessEnv = process.env,
  schemes: readonly EvmScheme[] = EVM_SCHEMES,
) {
  const ownRows = Object.entries(schemeRows(schemes));
  const known = [...new Set([...CONFIG_KEYS, ...ownRows.flatMap(([, row]) => row.key ?? [])])];
  const file = readConfigFile(resolveSetting(SETTINGS.config, { flags, env }), env, known);
  const sources: SettingSources = { flags, env, file };
  const setting = <R extends ValueRow>(row: R) => resolveSetting(row, sources);

  // Resolved in this order, so that of several mistakes the same one is reported first.
  return {
    rpcUrls: setting(SETTINGS.rpcUrls),
    publicRpcs: setting(SETTINGS.publicRpcs),
    rpcBatchLimit: setting(SETTINGS.rpcBatchLimit),
    confirmTimeoutMs: setting(SETTINGS.confirmTimeout),
    shutdownTimeoutMs: setting(SETTINGS.shutdownTimeout),
    ...keyLoaders(sources),
    journalPath: setting(SETTINGS.journal),
    storeUrl: setting(SETTINGS.store),
    storeLeaseMs: setting(SETTINGS.storeLease),
    retainDays: setting(SETTINGS.retainDays),
    svmMaxFeeLamports: setting(SETTINGS.svmMaxFeeLamports),
    svmSmartWallets: smartWalletsOf(sources),
    limits: limitsOf(sources),
    replaceAfterMs: setting(SETTINGS.replaceAfter),
    confirmations: setting(SETTINGS.confirmations),
    payerRevertLimit: setting(SETTINGS.payerRevertLimit),
    payerRevertWindowMs: setting(SETTINGS.payerRevertWindow),
    minSignerBalanceWei: setting(SETTINGS.minSignerBalance),
    // The value rows of the schemes' own settings.
    schemes: Object.fromEntries(
      ownRows.flatMap(([name, row]) => (row.kind === "value" ? [[name, setting(row)]] : [])),
    ) as Readonly<Record<string, unknown>>,
    erc6492Factories: setting(SETTINGS.erc6492Factories),
    builderCode: setting(SETTINGS.builderCode),
    denyList: setting(SETTINGS.denyList),
    ratePerClient: setting(SETTINGS.ratePerClient),
    minAmounts: setting(SETTINGS.minAmounts),
    ratePerPayer: setting(SETTINGS.ratePerPayer),
  };
}

/** What the operator allows a settlement to cost (fee caps per chain id win), and the assets settled. */
function limitsOf(sources: SettingSources) {
  const caps = resolvePerNetwork(SETTINGS.maxFee, sources);
  const budgets = resolvePerNetwork(SETTINGS.wastedGasBudget, sources);
  return {
    maxFeeWei: caps.all,
    maxFeeWeiByChain: caps.byChain,
    gasBounds: resolveSetting(SETTINGS.gasBounds, sources),
    wastedGasBudget: budgets.all,
    wastedGasBudgetByChain: budgets.byChain,
    allowedAssets: resolveSetting(SETTINGS.allowedAssets, sources),
  };
}

/** The smart-wallet settings, read only when they are switched on. */
function smartWalletsOf(sources: SettingSources): SmartWalletOptions | undefined {
  const setting = <R extends ValueRow>(row: R) => resolveSetting(row, sources);
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

/** The family's options the schemes' settings make, every scheme's together. */
export function schemeOptions(
  schemes: readonly EvmScheme[],
  values: Readonly<Record<string, unknown>>,
  run: { readonly server: boolean },
): Partial<SchemeOptions> {
  return Object.assign({}, ...schemes.map((scheme) => scheme.settings?.options(values, run) ?? {}));
}

/** Edit distance, to suggest the key someone meant. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      const cost = a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + cost);
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/** The JSON config file (none: an empty one): size-limited, keys checked, paths relative to it. */
function readConfigFile(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  keys: readonly string[],
): ConfigValues {
  if (!file) {
    return { values: {}, where: (key) => `${key} in the config file`, resolve: (p) => p };
  }
  const text = readSmallFile(file, `config file ${file}`, env);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the start of the text: never echo a file that may hold a key.
    throw new UsageError(`config file ${file} is not valid: not JSON`);
  }
  if (!isObject(parsed)) {
    throw new UsageError(`config file ${file} is not valid: expected a JSON object`);
  }
  for (const key of Object.keys(parsed)) {
    if (key === "$schema" || keys.includes(key)) continue;
    const near = keys.filter((known) => distance(key, known) <= 3);
    const shown = JSON.stringify(key.slice(0, 60));
    throw new UsageError(
      `config file ${file}: unknown key ${shown}${near.length > 0 ? ` (did you mean ${near.join(" or ")}?)` : ""}; the keys are ${keys.join(", ")}`,
    );
  }
  const dir = path.dirname(path.resolve(file));
  return {
    values: parsed as Record<string, unknown>,
    where: (key) => `${key} in ${file}`,
    resolve: (p) => path.resolve(dir, p),
  };
}
