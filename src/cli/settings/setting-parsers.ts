/** How a setting's value is read (fee caps, gas, assets too); a bad one names its source, never the value. */
import path from "node:path";
import { type Address, getAddress, isAddress, parseEther } from "viem";
import type { MinAmount } from "../../core/amount-floor.js";
import {
  SettingError,
  type SettingParser,
  type SettingSource,
  wholeNumber,
} from "../../core/scheme-settings.js";
import { GAS_BOUND_NAMES } from "../../evm/chain/gas-bounds.js";
import { EVM_SCHEMES } from "../../evm/schemes.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name } from "../../protocol/networks.js";
import { isSolanaAddress, looksSolana, solanaNetworkOf } from "../../protocol/solana-networks.js";
import { isObject } from "../../protocol/words.js";
import { UsageError } from "../io/errors.js";

/** `parse`, a refusal of core/scheme-settings.ts's parsers (the schemes' rows use them) a usage error. */
export function usage<T>(parse: SettingParser<T>): SettingParser<T> {
  return (value, source) => {
    try {
      return parse(value, source);
    } catch (error) {
      throw error instanceof SettingError ? new UsageError(error.message) : error;
    }
  };
}

/** A file path; in the config file a non-empty string, relative to the file's directory. */
export const filePath: SettingParser<string> = (value, source) => {
  if (source.from !== "file") return String(value);
  if (typeof value !== "string" || value.trim() === "") {
    throw new UsageError(`${source.name} must be a file path (a string)`);
  }
  return source.resolvePath(value);
};

/** A directory, made absolute. */
export const directory: SettingParser<string> = (value) => path.resolve(String(value));

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

/** http(s) URLs: comma-separated text, or a config file array of URL strings. */
export const httpUrls: SettingParser<string[]> = (value, source) => {
  if (source.from !== "file") {
    const urls = String(value)
      .split(",")
      .map((url) => url.trim())
      .filter(Boolean);
    return checkUrls(urls, source.name);
  }
  if (!Array.isArray(value)) throw new UsageError(`${source.name} must be an array of URLs`);
  value.forEach((url, i) => {
    if (typeof url !== "string") {
      throw new UsageError(`the ${ordinal(i + 1)} entry of ${source.name} is not a string`);
    }
  });
  return checkUrls(value as string[], source.name);
};

/** On or off: a flag's presence, 1/0 (or true, yes, on…) in the environment, a JSON boolean. */
export const onOff: SettingParser<boolean> = (value, source) => {
  if (source.from === "flag") return value === true;
  if (source.from === "file") {
    if (typeof value !== "boolean") throw new UsageError(`${source.name} must be true or false`);
    return value;
  }
  const text = String(value).trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(text)) return true;
  if (["0", "false", "no", "off"].includes(text)) return false;
  throw new UsageError(`${source.name} must be 1 or 0`);
};

/** A positive number of seconds, as milliseconds. */
export const positiveSeconds: SettingParser<number> = (value, source) => {
  const seconds = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`${source.name} must be a positive number of seconds`);
  }
  return Math.round(seconds * 1000);
};

/** Lamports: a whole number from 1. */
export const lamports: SettingParser<bigint> = (value, source) =>
  BigInt(wholeNumber(Number.MAX_SAFE_INTEGER)(value, source));

/** An amount in wei: a whole number (a JSON number only up to 2^53, a string beyond). */
export const wei: SettingParser<bigint> = (value, source) => {
  const digits = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof digits !== "string" || !/^[0-9]{1,78}$/.test(digits.trim())) {
    throw new UsageError(`${source.name} must be a whole number of wei, such as 1000000000000000`);
  }
  return BigInt(digits.trim());
};

/** A list: comma-separated text (a repeatable flag's values joined), or a JSON array. */
function listOf<T>(
  [plural, one]: [string, string],
  check: (item: unknown) => item is string,
  as: (item: string) => T,
): SettingParser<T[]> {
  return (value, source) => {
    const items = Array.isArray(value)
      ? value
      : typeof value === "string"
        ? value
            .split(",")
            .map((item) => item.trim())
            .filter(Boolean)
        : undefined;
    if (!items) throw new UsageError(`${source.name} must be a list of ${plural}`);
    return items.map((item, i) => {
      if (!check(item)) {
        throw new UsageError(`the ${ordinal(i + 1)} entry of ${source.name} is not ${one}`);
      }
      return as(item);
    });
  };
}

export const addresses: SettingParser<Address[]> = listOf(
  ["addresses", "an address"],
  (item): item is string => typeof item === "string" && isAddress(item, { strict: false }),
  (item) => getAddress(item),
);

/** A PostgreSQL connection URL; empty: none (the journal file). */
export const postgresUrl: SettingParser<string | undefined> = (value, source) => {
  if (value === "") return undefined;
  if (typeof value !== "string" || !/^postgres(ql)?:\/\//.test(value)) {
    throw new UsageError(
      `${source.name} must be a PostgreSQL URL (postgres://user@host:5432/database); the journal file is the default without it`,
    );
  }
  return value;
};

/** An ERC-8021 builder code: 1 to 32 of a-z, 0-9 and "_" (refused at start otherwise). */
export const builderCode: SettingParser<string> = (value, source) => {
  const text = typeof value === "string" ? value.trim() : "";
  if (!/^[a-z0-9_]{1,32}$/.test(text)) {
    throw new UsageError(
      `${source.name} must be a builder code: 1 to 32 lowercase letters, digits or "_" (ERC-8021), such as my_facilitator`,
    );
  }
  return text;
};

export const solanaAddresses: SettingParser<string[]> = listOf(
  ["Solana addresses", "a Solana address"],
  isSolanaAddress,
  (item) => item,
);

/** `gasBounds`: the most gas each method may use, for every network and per chain id. */
type GasBounds = Required<PerNetwork<Partial<Record<string, bigint>>>>;

/** A network as the config names it: a CAIP-2 id, an x402 v1 name, or a bare chain id. */
function chainIdOf(network: string, source: string): number {
  const chainId =
    chainIdOfCaip2(network) ??
    chainIdOfV1Name(network) ??
    (/^[0-9]{1,15}$/.test(network) ? Number(network) : undefined);
  if (chainId === undefined) {
    throw new UsageError(`${source}: "${network.slice(0, 60)}" is not a network`);
  }
  return chainId;
}

/** An amount of the chain's native token ("0.002") in wei. */
export const nativeAmount: SettingParser<bigint> = (value, source) => {
  const text = String(value).trim();
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) {
    throw new UsageError(`${source.name} must be an amount of the native token, such as 0.002`);
  }
  return parseEther(text);
};

/** A whole amount of gas. */
export const gasAmount: SettingParser<bigint> = (value, source) => parseGas(value, source.name);

function parseGas(value: unknown, source: string): bigint {
  const text = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== "string" || !/^[0-9]{1,15}$/.test(text.trim()) || BigInt(text) === 0n) {
    throw new UsageError(`${source} must be a whole amount of gas, such as 150000`);
  }
  return BigInt(text.trim());
}

export type PerNetwork<T> = { all?: T; byChain: Record<number, T> };

/** One value for every network, or per network: {"default": v, "<network>": v}, "<network>=v,…". */
export function perNetwork<T>(
  value: unknown,
  source: SettingSource,
  parse: SettingParser<T>,
): PerNetwork<T> {
  const found: PerNetwork<T> = { byChain: {} };
  if (value === undefined) return found;
  const entries: [string | undefined, unknown][] = isObject(value)
    ? Object.entries(value).map(([k, v]) => [k === "default" ? undefined : k, v])
    : textEntries(String(value)).map(([k, v]) => (v === undefined ? [undefined, k] : [k, v]));
  for (const [network, v] of entries) {
    if (network === undefined) found.all = parse(v, source);
    else {
      const chainId = chainIdOf(network, source.name);
      found.byChain[chainId] = parse(v, { ...source, name: `${source.name} for ${network}` });
    }
  }
  return found;
}

/** The bounds gasBounds may set: the family's, then the registered schemes' own. */
const GAS_NAMES: readonly string[] = [
  ...GAS_BOUND_NAMES,
  ...EVM_SCHEMES.flatMap((scheme) => (scheme.gas ?? []).map((use) => use.name)),
];

/** `gasBounds`: {"<name>": gas, ...} for every network, or per network (and "default"). */
export const gasBounds: SettingParser<GasBounds> = (value, { name: source }) => {
  const bounds: GasBounds = { all: {}, byChain: {} };
  const named = (v: unknown, where: string): Partial<Record<string, bigint>> => {
    if (!isObject(v)) {
      throw new UsageError(`${where} must be an object of gas bounds, such as {"eip3009": 150000}`);
    }
    const out: Partial<Record<string, bigint>> = {};
    for (const [name, gas] of Object.entries(v)) {
      if (!GAS_NAMES.includes(name)) {
        throw new UsageError(
          `${where}: "${name.slice(0, 60)}" is not a gas bound; they are ${GAS_NAMES.join(", ")}`,
        );
      }
      out[name] = parseGas(gas, `${where}.${name}`);
    }
    return out;
  };
  if (!isObject(value)) named(value, source);
  for (const [key, v] of Object.entries(value as object)) {
    if (GAS_NAMES.includes(key)) {
      Object.assign(bounds.all, named({ [key]: v }, source));
    } else if (key === "default") Object.assign(bounds.all, named(v, `${source}.default`));
    else bounds.byChain[chainIdOf(key, source)] = named(v, `${source}["${key}"]`);
  }
  return bounds;
};

/** `allowedAssets`: {"<network>": ["0x…", …]}. */
export const allowedAssets: SettingParser<Record<number, Address[]>> = (
  value,
  { name: source },
) => {
  const allowed: Record<number, Address[]> = {};
  if (!isObject(value)) {
    throw new UsageError(`${source} must map networks to lists of token addresses`);
  }
  for (const [network, list] of Object.entries(value)) {
    const where = `${source}["${network.slice(0, 60)}"]`;
    if (!Array.isArray(list) || list.some((a) => typeof a !== "string" || !isAddress(a))) {
      throw new UsageError(`${where} must be a list of token addresses`);
    }
    allowed[chainIdOf(network, source)] = list.map((a: string) => getAddress(a));
  }
  return allowed;
};

/** `--min-amount`: "[<network>:]<asset>=<atomic units>", comma-separated; or a config list/object. */
export const minAmounts: SettingParser<MinAmount[]> = (value, { name: source }) => {
  let entries: [string, unknown][];
  if (typeof value === "string") entries = textEntries(value);
  else if (Array.isArray(value) && value.every((v) => typeof v === "string")) {
    entries = value.flatMap(textEntries);
  } else if (isObject(value)) {
    entries = Object.entries(value);
  } else {
    throw new UsageError(`${source} must be a list of "<network>:<asset>=<units>"`);
  }
  return entries.map(([where, units]) => minAmount(where, units, source));
};

/** "a=1,b=2" as [["a", "1"], ["b", "2"]]; a part without "=" is [part, undefined]. */
function textEntries(text: string): [string, string | undefined][] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const at = part.lastIndexOf("=");
      return at === -1 ? [part, undefined] : [part.slice(0, at).trim(), part.slice(at + 1).trim()];
    });
}

function minAmount(where: string, units: unknown, source: string): MinAmount {
  const named = `${source}: "${where.slice(0, 120)}"`;
  const text = typeof units === "number" && Number.isSafeInteger(units) ? String(units) : units;
  if (typeof text !== "string" || !/^[0-9]{1,78}$/.test(text) || BigInt(text) === 0n) {
    throw new UsageError(
      `${named} needs a minimum in the asset's smallest units, a whole number from 1, as in eip155:8453:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913=10000`,
    );
  }
  const colon = where.lastIndexOf(":");
  const asset = where.slice(colon + 1);
  const network = colon === -1 ? undefined : where.slice(0, colon);
  const evm = isAddress(asset, { strict: false });
  if (!evm && !isSolanaAddress(asset)) {
    throw new UsageError(`${named} does not end in an EVM (0x…) or Solana token address`);
  }
  return { network: network && networkOf(network, evm, named), asset, units: BigInt(text) };
}

/** A network as the operator names it, as the CAIP-2 id requests are compared under. */
function networkOf(network: string, evmAsset: boolean, named: string): string {
  if (looksSolana(network)) {
    const id = solanaNetworkOf(network, 1) ?? solanaNetworkOf(network, 2);
    if (id === undefined || evmAsset) {
      throw new UsageError(`${named}: not a Solana network and a Solana token address`);
    }
    return id;
  }
  if (!evmAsset) throw new UsageError(`${named}: a Solana token address on an EVM network`);
  return caip2(chainIdOf(network, named));
}

/** Lower layers first: a layer's every-network value replaces all below, per-network its own. */
export function layered<T>(layers: readonly PerNetwork<T>[]): PerNetwork<T> {
  let found: PerNetwork<T> = { byChain: {} };
  for (const layer of layers) {
    if (layer.all !== undefined) found = { all: layer.all, byChain: {} };
    found = { ...found, byChain: { ...found.byChain, ...layer.byChain } };
  }
  return found;
}
