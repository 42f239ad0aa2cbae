/**
 * Configuration for the CLI: flags, then environment, then an optional JSON config file.
 * The settlement key is read from the environment or a file, never from a flag's value, and is
 * never echoed, not even in an error message.
 */
import { type Address, getAddress, type Hex, isAddress } from "viem";
import { defaultJournalPath } from "../store/journal-file.js";
import type { SvmFeePayer } from "../svm/chain/keys.js";
import { filePath, readConfigFile } from "./config-file.js";
import { type KeyFlags, keyLoaders } from "./config-keys.js";
import { loadLimits, type SettlementLimits } from "./config-limits.js";
import { UsageError } from "./errors.js";

export interface ConfigFlags extends KeyFlags {
  readonly rpcUrl?: string[] | undefined;
  readonly publicRpcs?: boolean | undefined;
  readonly erc6492Factory?: string[] | undefined;
  readonly svmMaxFeeLamports?: string | undefined;
  readonly config?: string | undefined;
  readonly confirmTimeout?: string | undefined;
  readonly journal?: string | undefined;
  readonly store?: string | undefined;
  readonly maxFee?: string | undefined;
  readonly confirmations?: string | undefined;
  readonly replaceAfter?: string | undefined;
  readonly minSignerBalance?: string | undefined;
  readonly claimBatchRows?: string | undefined;
  readonly claimBatchWait?: string | undefined;
  readonly denyList?: string | undefined;
  readonly ratePerClient?: string | undefined;
}

export interface CliConfig {
  readonly rpcUrls: string[];
  /**
   * The built-in public RPCs for well-known chains without a configured URL: true beside the
   * configured URLs too, false never; undefined: only when no URL is configured.
   */
  readonly publicRpcs?: boolean | undefined;
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
  readonly confirmTimeoutMs: number;
  readonly journalPath: string;
  /** A PostgreSQL URL: settlements live there, shared by replicas, instead of the journal file. */
  readonly storeUrl?: string | undefined;
  /** How long a replica's claims and signer leases outlive it in the store. */
  readonly storeLeaseMs?: number | undefined;
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
  /** batch-settlement claims: most rows in one transaction, and how long the first waits. */
  readonly claimBatch: { readonly maxRows?: number; readonly maxWaitMs?: number };
  /** The deny list's file: payers and payees refused before any chain call. */
  readonly denyList?: string | undefined;
  /** serve: /verify and /settle requests a minute per client address without a named key. */
  readonly ratePerClient?: number | undefined;
}

/** Most channels one claim transaction applies: 60,000 + 40,000 gas each stays under 20M. */
export const MAX_CLAIM_BATCH_ROWS = 500;

/** A setting from its flag, else its environment variable, else its config file key. */
function pick<T>(
  sources: readonly (readonly [value: unknown, source: string])[],
  parse: (value: unknown, source: string) => T,
): T | undefined {
  for (const [value, source] of sources) {
    if (value !== undefined && value !== "") return parse(value, source);
  }
  return undefined;
}

/** Seconds from 0 (no wait) to 60, as milliseconds. */
function parseWait(value: unknown, source: string): number {
  const seconds = typeof value === "number" ? value : Number(String(value).trim());
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 60) {
    throw new UsageError(`${source} must be a number of seconds from 0 to 60, such as 0.5`);
  }
  return Math.round(seconds * 1000);
}

/** A PostgreSQL connection URL, or undefined for the journal file. */
function storeUrlOf(value: unknown, name: string): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (typeof value !== "string" || !/^postgres(ql)?:\/\//.test(value)) {
    throw new UsageError(
      `${name} must be a PostgreSQL URL (postgres://user@host:5432/database); the journal file is the default without it`,
    );
  }
  return value;
}

function splitUrls(value: string): string[] {
  return value
    .split(",")
    .map((url) => url.trim())
    .filter(Boolean);
}

function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/** Why a string is not a URL, without quoting it: RPC URLs often hold an API key. */
function whyNotUrl(url: string): string {
  if (/\s/.test(url)) return "it contains a space";
  if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) return "it does not start with a scheme such as https://";
  return "it cannot be parsed as a URL";
}

/** Every URL must be http(s); an error names which one and why, never its text. */
function checkUrls(urls: readonly string[], source: string): string[] {
  urls.forEach((url, i) => {
    const which =
      urls.length === 1 ? `the URL of ${source}` : `the ${ordinal(i + 1)} URL of ${source}`;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`${which} is not a valid URL: ${whyNotUrl(url)}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new UsageError(`${which} must be http or https, not ${parsed.protocol.slice(0, -1)}`);
    }
  });
  return [...urls];
}

/** `rpcUrls` in the config file: an array of URL strings (anything else must not mean "none"). */
function fileUrls(value: unknown, source: string): string[] {
  if (!Array.isArray(value)) throw new UsageError(`${source} must be an array of URLs`);
  value.forEach((url, i) => {
    if (typeof url !== "string") {
      throw new UsageError(`the ${ordinal(i + 1)} entry of ${source} is not a string`);
    }
  });
  return checkUrls(value as string[], source);
}

const SWITCH_VALUES: Readonly<Record<string, boolean>> = {
  "1": true,
  true: true,
  yes: true,
  on: true,
  "0": false,
  false: false,
  no: false,
  off: false,
};

function publicRpcsSetting(
  flag: boolean | undefined,
  env: string | undefined,
  file: unknown,
  source: string,
): boolean | undefined {
  if (flag) return true;
  if (env?.trim()) {
    const value = SWITCH_VALUES[env.trim().toLowerCase()];
    if (value === undefined) throw new UsageError("FACILITATOR_PUBLIC_RPCS must be 1 or 0");
    return value;
  }
  if (file === undefined) return undefined;
  if (typeof file !== "boolean") {
    throw new UsageError(`${source} must be true or false`);
  }
  return file;
}

/** A whole number from 1 to `max`, from a flag, the environment or the config file. */
function parseCount(value: unknown, source: string, max: number): number {
  const n = typeof value === "number" ? value : Number(String(value).trim());
  if (!Number.isSafeInteger(n) || n < 1 || n > max) {
    throw new UsageError(`${source} must be a whole number from 1 to ${max}`);
  }
  return n;
}

/** Addresses from a flag (repeatable, comma-separated), the environment or the config file. */
function addressList(value: unknown, source: string): Address[] {
  const items = Array.isArray(value)
    ? value
    : typeof value === "string"
      ? value
          .split(",")
          .map((item) => item.trim())
          .filter(Boolean)
      : undefined;
  if (!items) throw new UsageError(`${source} must be a list of addresses`);
  return items.map((item, i) => {
    if (typeof item !== "string" || !isAddress(item, { strict: false })) {
      throw new UsageError(`the ${ordinal(i + 1)} entry of ${source} is not an address`);
    }
    return getAddress(item);
  });
}

function parseSeconds(value: unknown, source: string): number {
  const seconds = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`${source} must be a positive number of seconds`);
  }
  return Math.round(seconds * 1000);
}

/** An amount in wei: a whole number (a JSON number only up to 2^53, a string beyond). */
function parseWei(value: unknown, source: string): bigint {
  const text = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== "string" || !/^[0-9]{1,78}$/.test(text.trim())) {
    throw new UsageError(`${source} must be a whole number of wei, such as 1000000000000000`);
  }
  return BigInt(text.trim());
}

export function loadConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv = process.env): CliConfig {
  const loaded = readConfigFile(flags.config ?? env.FACILITATOR_CONFIG, env);
  const file = loaded.values;
  const where = loaded.where;

  let rpcUrls: string[];
  if (flags.rpcUrl && flags.rpcUrl.length > 0) {
    rpcUrls = checkUrls(flags.rpcUrl.flatMap(splitUrls), "--rpc-url");
  } else if (env.FACILITATOR_RPC_URL) {
    rpcUrls = checkUrls(splitUrls(env.FACILITATOR_RPC_URL), "FACILITATOR_RPC_URL");
  } else if (file.rpcUrls !== undefined) rpcUrls = fileUrls(file.rpcUrls, where("rpcUrls"));
  else rpcUrls = [];
  const publicRpcs = publicRpcsSetting(
    flags.publicRpcs,
    env.FACILITATOR_PUBLIC_RPCS,
    file.publicRpcs,
    where("publicRpcs"),
  );

  const confirmTimeoutMs =
    flags.confirmTimeout !== undefined
      ? parseSeconds(flags.confirmTimeout, "--confirm-timeout")
      : env.FACILITATOR_CONFIRM_TIMEOUT
        ? parseSeconds(env.FACILITATOR_CONFIRM_TIMEOUT, "FACILITATOR_CONFIRM_TIMEOUT")
        : file.confirmTimeoutSeconds !== undefined
          ? parseSeconds(file.confirmTimeoutSeconds, where("confirmTimeoutSeconds"))
          : 60_000;

  const { loadPrivateKey, loadPrivateKeys, loadReceiverAuthorizerKey, loadSvmFeePayers } =
    keyLoaders(flags, env, loaded);

  const journalPath =
    flags.journal ??
    env.FACILITATOR_JOURNAL ??
    filePath(file.journal, "journal", loaded) ??
    defaultJournalPath(env);

  const storeUrl = storeUrlOf(
    flags.store ?? env.FACILITATOR_STORE ?? (file.store as string | undefined),
    flags.store !== undefined
      ? "--store"
      : env.FACILITATOR_STORE !== undefined
        ? "FACILITATOR_STORE"
        : where("store"),
  );
  const storeLeaseMs = env.FACILITATOR_STORE_LEASE_SECONDS
    ? parseSeconds(env.FACILITATOR_STORE_LEASE_SECONDS, "FACILITATOR_STORE_LEASE_SECONDS")
    : file.storeLeaseSeconds !== undefined
      ? parseSeconds(file.storeLeaseSeconds, where("storeLeaseSeconds"))
      : undefined;

  const lamports = (value: unknown, source: string) =>
    BigInt(parseCount(value, source, Number.MAX_SAFE_INTEGER));
  const svmMaxFeeLamports =
    flags.svmMaxFeeLamports !== undefined
      ? lamports(flags.svmMaxFeeLamports, "--svm-max-fee-lamports")
      : env.FACILITATOR_SVM_MAX_FEE_LAMPORTS
        ? lamports(env.FACILITATOR_SVM_MAX_FEE_LAMPORTS, "FACILITATOR_SVM_MAX_FEE_LAMPORTS")
        : file.svmMaxFeeLamports !== undefined
          ? lamports(file.svmMaxFeeLamports, where("svmMaxFeeLamports"))
          : undefined;

  const limits = loadLimits(flags, env, file, where);

  const replaceAfterMs =
    flags.replaceAfter !== undefined
      ? parseSeconds(flags.replaceAfter, "--replace-after")
      : file.replaceAfterSeconds !== undefined
        ? parseSeconds(file.replaceAfterSeconds, where("replaceAfterSeconds"))
        : 15_000;

  const confirmations =
    flags.confirmations !== undefined
      ? parseCount(flags.confirmations, "--confirmations", 1000)
      : env.FACILITATOR_CONFIRMATIONS
        ? parseCount(env.FACILITATOR_CONFIRMATIONS, "FACILITATOR_CONFIRMATIONS", 1000)
        : file.confirmations !== undefined
          ? parseCount(file.confirmations, where("confirmations"), 1000)
          : 1;
  const payerRevertLimit =
    file.payerRevertLimit !== undefined
      ? parseCount(file.payerRevertLimit, where("payerRevertLimit"), 1_000_000)
      : undefined;
  const payerRevertWindowMs =
    file.payerRevertWindowSeconds !== undefined
      ? parseSeconds(file.payerRevertWindowSeconds, where("payerRevertWindowSeconds"))
      : undefined;

  const minSignerBalanceWei =
    flags.minSignerBalance !== undefined
      ? parseWei(flags.minSignerBalance, "--min-signer-balance")
      : env.FACILITATOR_MIN_SIGNER_BALANCE
        ? parseWei(env.FACILITATOR_MIN_SIGNER_BALANCE, "FACILITATOR_MIN_SIGNER_BALANCE")
        : file.minSignerBalanceWei !== undefined
          ? parseWei(file.minSignerBalanceWei, where("minSignerBalanceWei"))
          : undefined;

  const claimBatch = {
    maxRows: pick(
      [
        [flags.claimBatchRows, "--claim-batch-rows"],
        [env.FACILITATOR_CLAIM_BATCH_ROWS, "FACILITATOR_CLAIM_BATCH_ROWS"],
        [file.claimBatchRows, where("claimBatchRows")],
      ],
      (value, source) => parseCount(value, source, MAX_CLAIM_BATCH_ROWS),
    ),
    maxWaitMs: pick(
      [
        [flags.claimBatchWait, "--claim-batch-wait"],
        [env.FACILITATOR_CLAIM_BATCH_WAIT, "FACILITATOR_CLAIM_BATCH_WAIT"],
        [file.claimBatchWaitSeconds, where("claimBatchWaitSeconds")],
      ],
      parseWait,
    ),
  };

  const denyList = pick(
    [
      [flags.denyList, "--deny-list"],
      [env.FACILITATOR_DENY_LIST, "FACILITATOR_DENY_LIST"],
      [file.denyList, where("denyList")],
    ],
    (value, source) =>
      source === where("denyList") ? filePath(value, "denyList", loaded) : String(value),
  );
  const ratePerClient = pick(
    [
      [flags.ratePerClient, "--rate-per-client"],
      [env.FACILITATOR_RATE_PER_CLIENT, "FACILITATOR_RATE_PER_CLIENT"],
      [file.ratePerClient, where("ratePerClient")],
    ],
    (value, source) => parseCount(value, source, 1_000_000),
  );

  const erc6492Factories =
    flags.erc6492Factory && flags.erc6492Factory.length > 0
      ? addressList(flags.erc6492Factory.join(","), "--erc6492-factory")
      : env.FACILITATOR_ERC6492_FACTORIES
        ? addressList(env.FACILITATOR_ERC6492_FACTORIES, "FACILITATOR_ERC6492_FACTORIES")
        : file.erc6492Factories !== undefined
          ? addressList(file.erc6492Factories, where("erc6492Factories"))
          : [];

  return {
    erc6492Factories,
    confirmations,
    payerRevertLimit,
    payerRevertWindowMs,
    rpcUrls,
    publicRpcs,
    loadPrivateKey,
    loadPrivateKeys,
    loadReceiverAuthorizerKey,
    loadSvmFeePayers,
    svmMaxFeeLamports,
    confirmTimeoutMs,
    journalPath,
    storeUrl,
    storeLeaseMs,
    limits,
    replaceAfterMs,
    minSignerBalanceWei,
    claimBatch,
    denyList,
    ratePerClient,
  };
}
