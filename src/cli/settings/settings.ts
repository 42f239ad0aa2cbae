/** Every setting once: flag, env, config key, parser, default, help (docs are held to it). */
import os from "node:os";
import path from "node:path";
import type { Address } from "viem";
import { secondsFrom, wholeNumber } from "../../core/scheme-settings.js";
import { DEFAULT_RATE_PER_PAYER } from "../../core/settle-rate.js";
import { DEFAULT_WASTED_GAS_BUDGET } from "../../evm/chain/gas-at-risk.js";
import type { EvmScheme } from "../../evm/scheme.js";
import { EVM_SCHEMES, type SchemeRows } from "../../evm/schemes.js";
import { DEFAULT_BATCH_LIMIT } from "../../rpc/provider-limits.js";
import { defaultJournalPath } from "../../store/journal-file.js";
import { DEFAULT_RETAIN_DAYS } from "../../store/postgres-retention.js";
import {
  DEFAULT_MAX_FEE_LAMPORTS,
  DEFAULT_SMART_WALLET_MAX_COMPUTE_UNITS,
  DEFAULT_SMART_WALLET_MAX_PRIORITY_FEE,
  MAX_TRANSACTION_COMPUTE_UNITS,
} from "../../svm/exact/constants.js";
import { DEFAULT_LEASE_MS, MAX_LEASE_MS } from "../locks/lock-files.js";
import {
  addresses,
  allowedAssets,
  builderCode,
  directory,
  filePath,
  gasAmount,
  gasBounds,
  httpUrls,
  lamports,
  minAmounts,
  nativeAmount,
  onOff,
  positiveSeconds,
  postgresUrl,
  solanaAddresses,
  wei,
} from "./setting-parsers.js";
import { key, perNetwork, type Setting, value } from "./setting-rows.js";

/** A number of seconds read by `parse` as ms, its default `ms`, shown in seconds. */
const inSeconds = (ms: number, parse = positiveSeconds, shown = String(ms / 1000)) => ({
  parse,
  default: () => ms,
  shownDefault: shown,
});

export const SETTINGS = {
  config: value({
    flag: "--config <file>",
    env: "FACILITATOR_CONFIG",
    parse: filePath,
    help: "JSON config file",
  }),
  rpcUrls: value({
    flag: "--rpc-url <url>",
    repeatable: true,
    env: "FACILITATOR_RPC_URL",
    key: "rpcUrls",
    parse: httpUrls,
    default: (): string[] => [],
    help: "RPC endpoint, repeatable or comma-separated; only their chains are served",
  }),
  publicRpcs: value({
    flag: "--public-rpcs",
    env: "FACILITATOR_PUBLIC_RPCS",
    key: "publicRpcs",
    parse: onOff,
    help: "also serve well-known chains that have no --rpc-url through built-in public RPCs, as when no RPC is configured",
  }),
  rpcBatchLimit: value({
    flag: "--rpc-batch-limit <n>",
    env: "FACILITATOR_RPC_BATCH_LIMIT",
    key: "rpcBatchLimit",
    parse: wholeNumber(DEFAULT_BATCH_LIMIT),
    shownDefault: `${DEFAULT_BATCH_LIMIT}, lowered for an RPC that refuses a batch`,
    help: "most JSON-RPC calls sent in one batch request to an RPC; 1: no batches",
  }),
  erc6492Factories: value({
    flag: "--erc6492-factory <address>",
    repeatable: true,
    env: "FACILITATOR_ERC6492_FACTORIES",
    key: "erc6492Factories",
    parse: addresses,
    default: () => [],
    help: "let undeployed (ERC-6492) wallets of this factory pay, deploying them as they settle; repeatable",
  }),
  privateKeys: key({
    flag: "--private-key-file <file>",
    env: "FACILITATOR_PRIVATE_KEY",
    envFile: "FACILITATOR_PRIVATE_KEY_FILE",
    key: "privateKeyFile",
    help: "settlement key file, one key per line for a pool",
  }),
  ...(schemeRows(EVM_SCHEMES) as SchemeRows),
  svmFeePayers: key({
    flag: "--svm-private-key-file <file>",
    env: "FACILITATOR_SVM_PRIVATE_KEY",
    envFile: "FACILITATOR_SVM_PRIVATE_KEY_FILE",
    key: "svmPrivateKeyFile",
    help: "Solana fee payer key file, base58 secret keys one per line",
  }),
  svmMaxFeeLamports: value({
    flag: "--svm-max-fee-lamports <n>",
    env: "FACILITATOR_SVM_MAX_FEE_LAMPORTS",
    key: "svmMaxFeeLamports",
    parse: lamports,
    shownDefault: String(DEFAULT_MAX_FEE_LAMPORTS),
    help: "most lamports one Solana settlement may cost the fee payer",
  }),
  svmSmartWallets: value({
    flag: "--svm-smart-wallets",
    env: "FACILITATOR_SVM_SMART_WALLETS",
    key: "svmSmartWallets",
    parse: onOff,
    help: "take Solana payments from smart wallets (Squads, Swig, …): checked by simulating their transaction, and confirmed on chain after settling",
  }),
  svmSmartWalletPrograms: value({
    flag: "--svm-smart-wallet-program <address>",
    repeatable: true,
    env: "FACILITATOR_SVM_SMART_WALLET_PROGRAMS",
    key: "svmSmartWalletPrograms",
    parse: solanaAddresses,
    shownDefault: "the official facilitator's seven",
    help: "with --svm-smart-wallets: the programs a smart wallet's payment may call besides the compute budget and memos; repeatable, replaces the default list",
  }),
  svmSmartWalletMaxComputeUnits: value({
    flag: "--svm-smart-wallet-max-compute-units <n>",
    env: "FACILITATOR_SVM_SMART_WALLET_MAX_UNITS",
    key: "svmSmartWalletMaxComputeUnits",
    parse: wholeNumber(MAX_TRANSACTION_COMPUTE_UNITS),
    default: () => DEFAULT_SMART_WALLET_MAX_COMPUTE_UNITS,
    shownDefault: String(DEFAULT_SMART_WALLET_MAX_COMPUTE_UNITS),
    help: "with --svm-smart-wallets: the highest compute-unit limit a smart wallet's payment may set",
  }),
  svmSmartWalletMaxPriorityFee: value({
    flag: "--svm-smart-wallet-max-priority-fee <microlamports>",
    env: "FACILITATOR_SVM_SMART_WALLET_MAX_PRICE",
    key: "svmSmartWalletMaxPriorityFee",
    parse: wholeNumber(Number.MAX_SAFE_INTEGER, 0),
    default: () => Number(DEFAULT_SMART_WALLET_MAX_PRIORITY_FEE),
    shownDefault: String(DEFAULT_SMART_WALLET_MAX_PRIORITY_FEE),
    help: "with --svm-smart-wallets: the highest compute-unit price, in micro-lamports per unit, a smart wallet's payment may set",
  }),
  confirmTimeout: value({
    flag: "--confirm-timeout <seconds>",
    env: "FACILITATOR_CONFIRM_TIMEOUT",
    key: "confirmTimeoutSeconds",
    ...inSeconds(60_000),
    help: "how long to wait for the receipt before answering settlement_pending",
  }),
  shutdownTimeout: value({
    flag: "--shutdown-timeout <seconds>",
    env: "FACILITATOR_SHUTDOWN_TIMEOUT",
    key: "shutdownTimeoutSeconds",
    // Inside `docker stop`'s 10 s before its SIGKILL, with room for the process to end.
    ...inSeconds(8_000),
    help: "serve: on SIGTERM or Ctrl-C, how long requests in flight may take to answer; a settle still waiting then is answered settlement_pending (it is in the journal) and the process exits",
  }),
  journal: value({
    flag: "--journal <file>",
    env: "FACILITATOR_JOURNAL",
    key: "journal",
    parse: filePath,
    default: (env) => defaultJournalPath(env),
    shownDefault: "~/.local/state/facilitator/journal.jsonl",
    help: "settlement journal",
  }),
  store: value({
    flag: "--store <url>",
    env: "FACILITATOR_STORE",
    key: "store",
    parse: postgresUrl,
    help: "keep settlements in PostgreSQL, shared by several serve replicas, instead of the journal; put the password in PGPASSWORD or the config file",
  }),
  storeLease: value({
    env: "FACILITATOR_STORE_LEASE_SECONDS",
    key: "storeLeaseSeconds",
    parse: positiveSeconds,
    shownDefault: "15",
    help: "how long a replica's claims and signer leases outlive it in the store",
  }),
  retainDays: value({
    flag: "--retain-days <days>",
    env: "FACILITATOR_RETAIN_DAYS",
    key: "retainDays",
    parse: wholeNumber(36_500, 0),
    default: () => DEFAULT_RETAIN_DAYS,
    shownDefault: `${DEFAULT_RETAIN_DAYS}; 0: never`,
    help: "final settlements older than this many days leave the hot store: PostgreSQL moves them to an archive table status still reads; the journal deletes archive segments past it",
  }),
  maxFee: perNetwork({
    flag: "--max-fee <amount>",
    env: "FACILITATOR_MAX_FEE",
    key: "maxFee",
    parse: nativeAmount,
    shownDefault: "per network, see doctor",
    help: "most one settlement may cost in the native token: one amount for every network, such as 0.002, or per network, such as eip155:8453=0.002,eip155:1=0.02",
  }),
  gasBounds: value({
    key: "gasBounds",
    parse: gasBounds,
    default: () => ({ all: {}, byChain: {} }),
    help: "the most gas each method may use, for every network or per network",
  }),
  wastedGasBudget: perNetwork({
    env: "FACILITATOR_WASTED_GAS_BUDGET",
    key: "wastedGasBudget",
    parse: gasAmount,
    shownDefault: String(DEFAULT_WASTED_GAS_BUDGET),
    help: "wasted gas per network and hour before payers wait",
  }),
  allowedAssets: value({
    key: "allowedAssets",
    parse: allowedAssets,
    default: (): Record<number, Address[]> => ({}),
    help: "the only assets settled, per network",
  }),
  minAmounts: value({
    flag: "--min-amount <[network:]asset=units>",
    repeatable: true,
    env: "FACILITATOR_MIN_AMOUNTS",
    key: "minAmounts",
    parse: minAmounts,
    default: () => [],
    shownDefault: "none; 0 is always refused",
    help: "refuse payments of an asset below this many of its smallest units, on one network (eip155:8453:0x8335…=10000) or on every one (0x8335…=10000); repeatable",
  }),
  ratePerPayer: value({
    flag: "--rate-per-payer <n>",
    env: "FACILITATOR_RATE_PER_PAYER",
    key: "ratePerPayer",
    parse: wholeNumber(1_000_000, 0),
    default: () => DEFAULT_RATE_PER_PAYER,
    shownDefault: `${DEFAULT_RATE_PER_PAYER}; 0: off`,
    help: "each payer and each payee may have n settlements a minute sent for it (bursts of n); more wait with 429 payer_throttled",
  }),
  replaceAfter: value({
    flag: "--replace-after <seconds>",
    key: "replaceAfterSeconds",
    ...inSeconds(15_000),
    help: "replace a transaction stuck in the mempool this long with a higher fee",
  }),
  confirmations: value({
    flag: "--confirmations <n>",
    env: "FACILITATOR_CONFIRMATIONS",
    key: "confirmations",
    parse: wholeNumber(1000),
    default: () => 1,
    shownDefault: "1",
    help: "blocks a receipt must be deep before confirmed answers, for chains with deep reorgs",
  }),
  payerRevertLimit: value({
    key: "payerRevertLimit",
    parse: wholeNumber(1_000_000),
    shownDefault: "3",
    help: "reverts charged to one payer within the window before its settles wait",
  }),
  payerRevertWindow: value({
    key: "payerRevertWindowSeconds",
    parse: positiveSeconds,
    shownDefault: "600",
    help: "the window payerRevertLimit counts reverts in",
  }),
  minSignerBalance: value({
    flag: "--min-signer-balance <wei>",
    env: "FACILITATOR_MIN_SIGNER_BALANCE",
    key: "minSignerBalanceWei",
    parse: wei,
    shownDefault: "1",
    help: "/readyz answers 503 while a signer holds less native balance than this on a chain",
  }),
  apiKey: key({
    flag: "--api-key-file <file>",
    env: "FACILITATOR_API_KEY",
    help: "require Authorization: Bearer <key> on /verify, /settle, /accepts and /metrics",
  }),
  builderCode: value({
    flag: "--builder-code <code>",
    env: "FACILITATOR_BUILDER_CODE",
    key: "builderCode",
    parse: builderCode,
    help: "credit every EVM settlement transaction to this ERC-8021 builder code (with the app and service codes a payment declares, four at most; without it, a payment adds none); /supported lists builder-code",
  }),
  denyList: value({
    flag: "--deny-list <file>",
    env: "FACILITATOR_DENY_LIST",
    key: "denyList",
    parse: filePath,
    help: "refuse payments whose payer or payee is in this file, one EVM or Solana address a line; serve re-reads it when it changes",
  }),
  ratePerClient: value({
    flag: "--rate-per-client <n>",
    env: "FACILITATOR_RATE_PER_CLIENT",
    key: "ratePerClient",
    parse: wholeNumber(1_000_000),
    shownDefault: "off",
    help: "without a named API key, each client address may make n /verify and /settle requests a minute; more are 429 rate_limited",
  }),
  apiKeysFile: value({
    flag: "--api-keys-file <file>",
    env: "FACILITATOR_API_KEYS_FILE",
    parse: filePath,
    help: "named API keys, each with the sellers (payTo) it acts for: our receiver authorizer signs a refund only for its channel's seller; see docs/serve.md",
  }),
  lockDir: value({
    env: "FACILITATOR_LOCK_DIR",
    parse: directory,
    default: (env) =>
      path.join(
        env.XDG_STATE_HOME || path.join(os.homedir(), ".local", "state"),
        "facilitator",
        "locks",
      ),
    shownDefault: "~/.local/state/facilitator/locks",
    help: "where key lock files live (journal file only); a directory other users cannot write",
  }),
  lockTimeout: value({
    env: "FACILITATOR_LOCK_TIMEOUT",
    ...inSeconds(300_000, secondsFrom(0, 86_400)),
    help: "how long a settle waits for its turn with a key, in seconds",
  }),
  lockLease: value({
    env: "FACILITATOR_LOCK_LEASE",
    ...inSeconds(DEFAULT_LEASE_MS, secondsFrom(1, MAX_LEASE_MS / 1000)),
    help: "how long a lock from another host counts without being renewed, in seconds",
  }),
  inputTimeout: value({
    env: "FACILITATOR_INPUT_TIMEOUT",
    ...inSeconds(
      30_000,
      secondsFrom(0, undefined, "must be a number of seconds (0: no limit)"),
      "30; 0: none",
    ),
    help: "how long to wait for input from a pipe, FIFO, device or stdin, in seconds",
  }),
  reconcileEvery: value({
    env: "FACILITATOR_RECONCILE_SECONDS",
    ...inSeconds(5_000, secondsFrom(0, undefined), "5; 0: none"),
    help: "serve: a reconciler pass every this many seconds",
  }),
  reconcileIdle: value({
    env: "FACILITATOR_RECONCILE_IDLE_SECONDS",
    ...inSeconds(10_000, secondsFrom(0, undefined)),
    help: "serve: the reconciler follows settlements unchanged for this many seconds",
  }),
} as const satisfies Record<string, Setting>;

/** The rows the schemes declare. */
export function schemeRows(schemes: readonly EvmScheme[]): Record<string, Setting> {
  const rows: Record<string, Setting> = {};
  for (const scheme of schemes) {
    for (const [name, row] of Object.entries(scheme.settings?.rows ?? {})) {
      if (name in rows) throw new Error(`two schemes declare the setting ${name}`);
      rows[name] = row;
    }
  }
  return rows;
}

/** Every key the config file may hold ("$schema" too, for editors), in the table's order. */
export const CONFIG_KEYS: readonly string[] = Object.values(SETTINGS).flatMap((row: Setting) =>
  row.key ? [row.key] : [],
);
