/**
 * The JSON config file: read with a size limit, checked key by key (an unknown key or a value of
 * the wrong type names the file and the key), paths in it relative to its own directory.
 */
import path from "node:path";
import { readSmallFile } from "./bounded-read.js";
import { UsageError } from "./errors.js";

export interface ConfigFile {
  rpcUrls?: unknown;
  publicRpcs?: unknown;
  erc6492Factories?: unknown;
  privateKeyFile?: unknown;
  receiverAuthorizerKeyFile?: unknown;
  claimBatchRows?: unknown;
  claimBatchWaitSeconds?: unknown;
  svmPrivateKeyFile?: unknown;
  svmMaxFeeLamports?: unknown;
  confirmTimeoutSeconds?: unknown;
  journal?: unknown;
  store?: unknown;
  storeLeaseSeconds?: unknown;
  maxFee?: unknown;
  gasBounds?: unknown;
  wastedGasBudget?: unknown;
  allowedAssets?: unknown;
  replaceAfterSeconds?: unknown;
  confirmations?: unknown;
  payerRevertLimit?: unknown;
  payerRevertWindowSeconds?: unknown;
  minSignerBalanceWei?: unknown;
  denyList?: unknown;
  ratePerClient?: unknown;
}

/** Every key the config file may hold ("$schema" too, for editors). */
const CONFIG_KEYS = [
  "rpcUrls",
  "publicRpcs",
  "erc6492Factories",
  "privateKeyFile",
  "receiverAuthorizerKeyFile",
  "claimBatchRows",
  "claimBatchWaitSeconds",
  "svmPrivateKeyFile",
  "svmMaxFeeLamports",
  "confirmTimeoutSeconds",
  "journal",
  "store",
  "storeLeaseSeconds",
  "maxFee",
  "gasBounds",
  "wastedGasBudget",
  "allowedAssets",
  "replaceAfterSeconds",
  "confirmations",
  "payerRevertLimit",
  "payerRevertWindowSeconds",
  "minSignerBalanceWei",
  "denyList",
  "ratePerClient",
] as const;

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

export interface LoadedFile {
  readonly values: ConfigFile;
  /** "rpcUrls in /path/config.json": how messages name a key of this file. */
  readonly where: (key: string) => string;
  /** A path in the file, relative to the file's own directory. */
  readonly resolve: (file: string) => string;
}

export function readConfigFile(file: string | undefined, env: NodeJS.ProcessEnv): LoadedFile {
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
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`config file ${file} is not valid: expected a JSON object`);
  }
  for (const key of Object.keys(parsed)) {
    if (key === "$schema" || (CONFIG_KEYS as readonly string[]).includes(key)) continue;
    const near = CONFIG_KEYS.filter((known) => distance(key, known) <= 3);
    const shown = JSON.stringify(key.slice(0, 60));
    throw new UsageError(
      `config file ${file}: unknown key ${shown}${near.length > 0 ? ` (did you mean ${near.join(" or ")}?)` : ""}; the keys are ${CONFIG_KEYS.join(", ")}`,
    );
  }
  const dir = path.dirname(path.resolve(file));
  return {
    values: parsed as ConfigFile,
    where: (key) => `${key} in ${file}`,
    resolve: (p) => path.resolve(dir, p),
  };
}

/** A path-valued key of the config file: a string, relative to the file's directory. */
export function filePath(value: unknown, key: string, loaded: LoadedFile): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new UsageError(`${loaded.where(key)} must be a file path (a string)`);
  }
  return loaded.resolve(value);
}
