/**
 * What the operator allows a settlement to cost: the fee cap per network (flag, environment or
 * config file, over the built-in per-network defaults), the gas bounds per method and network, the
 * wasted-gas budget per network and hour, and the assets each network settles (config file).
 */
import { type Address, getAddress, isAddress, parseEther } from "viem";
import { GAS_BOUND_NAMES, type GasBoundName } from "../evm/chain/gas-bounds.js";
import { chainIdOfCaip2, chainIdOfV1Name } from "../protocol/networks.js";
import type { ConfigFile } from "./config-file.js";
import { UsageError } from "./errors.js";

export interface SettlementLimits {
  /** Fee cap in wei for every chain, and per chain id (which wins); unset: networks.ts defaults. */
  readonly maxFeeWei?: bigint | undefined;
  readonly maxFeeWeiByChain: Record<number, bigint>;
  readonly gasBounds: {
    readonly all: Partial<Record<GasBoundName, bigint>>;
    readonly byChain: Record<number, Partial<Record<GasBoundName, bigint>>>;
  };
  readonly wastedGasBudget?: bigint | undefined;
  readonly wastedGasBudgetByChain: Record<number, bigint>;
  /** Per chain id, the only assets settled there. */
  readonly allowedAssets: Record<number, Address[]>;
}

export interface LimitFlags {
  readonly maxFee?: string | undefined;
}

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
function parseFee(value: unknown, source: string): bigint {
  const text = String(value).trim();
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) {
    throw new UsageError(`${source} must be an amount of the native token, such as 0.002`);
  }
  return parseEther(text);
}

/** A whole amount of gas. */
function parseGas(value: unknown, source: string): bigint {
  const text = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== "string" || !/^[0-9]{1,15}$/.test(text.trim()) || BigInt(text) === 0n) {
    throw new UsageError(`${source} must be a whole amount of gas, such as 150000`);
  }
  return BigInt(text.trim());
}

type PerNetwork<T> = { all?: T; byChain: Record<number, T> };

/**
 * One value for every network, or per network: {"default": v, "<network>": v, ...} in the config
 * file, "v" or "<network>=v,..." (a bare v applies to every network) in a flag or the environment.
 */
function perNetwork<T>(
  value: unknown,
  source: string,
  parse: (v: unknown, source: string) => T,
): PerNetwork<T> {
  const found: PerNetwork<T> = { byChain: {} };
  if (value === undefined) return found;
  const entries: [string | undefined, unknown][] =
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.entries(value).map(([k, v]) => [k === "default" ? undefined : k, v])
      : String(value)
          .split(",")
          .map((part) => part.trim())
          .filter(Boolean)
          .map((part) => {
            const at = part.lastIndexOf("=");
            return at === -1 ? [undefined, part] : [part.slice(0, at).trim(), part.slice(at + 1)];
          });
  for (const [network, v] of entries) {
    if (network === undefined) found.all = parse(v, source);
    else found.byChain[chainIdOf(network, source)] = parse(v, `${source} for ${network}`);
  }
  return found;
}

/** `gasBounds`: {"<name>": gas, ...} for every network, or per network (and "default"). */
function gasBounds(value: unknown, source: string): SettlementLimits["gasBounds"] {
  const bounds: SettlementLimits["gasBounds"] = { all: {}, byChain: {} };
  if (value === undefined) return bounds;
  const named = (v: unknown, where: string): Partial<Record<GasBoundName, bigint>> => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new UsageError(`${where} must be an object of gas bounds, such as {"eip3009": 150000}`);
    }
    const out: Partial<Record<GasBoundName, bigint>> = {};
    for (const [name, gas] of Object.entries(v)) {
      if (!(GAS_BOUND_NAMES as string[]).includes(name)) {
        throw new UsageError(
          `${where}: "${name.slice(0, 60)}" is not a gas bound; they are ${GAS_BOUND_NAMES.join(", ")}`,
        );
      }
      out[name as GasBoundName] = parseGas(gas, `${where}.${name}`);
    }
    return out;
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) named(value, source);
  for (const [key, v] of Object.entries(value as object)) {
    if ((GAS_BOUND_NAMES as string[]).includes(key)) {
      Object.assign(bounds.all, named({ [key]: v }, source));
    } else if (key === "default") Object.assign(bounds.all, named(v, `${source}.default`));
    else bounds.byChain[chainIdOf(key, source)] = named(v, `${source}["${key}"]`);
  }
  return bounds;
}

/** `allowedAssets`: {"<network>": ["0x…", …]}. */
function allowedAssets(value: unknown, source: string): Record<number, Address[]> {
  const allowed: Record<number, Address[]> = {};
  if (value === undefined) return allowed;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
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
}

/**
 * Lower layers first: a layer's one value for every network replaces everything below it, and its
 * per-network values replace those of the same network.
 */
function layered<T>(layers: readonly PerNetwork<T>[]): PerNetwork<T> {
  let found: PerNetwork<T> = { byChain: {} };
  for (const layer of layers) {
    if (layer.all !== undefined) found = { all: layer.all, byChain: {} };
    found = { ...found, byChain: { ...found.byChain, ...layer.byChain } };
  }
  return found;
}

export function loadLimits(
  flags: LimitFlags,
  env: NodeJS.ProcessEnv,
  file: ConfigFile,
  where: (key: string) => string,
): SettlementLimits {
  // The flag wins over the environment, which wins over the file.
  const fileCaps = perNetwork(file.maxFee, where("maxFee"), parseFee);
  const envCaps = perNetwork(env.FACILITATOR_MAX_FEE || undefined, "FACILITATOR_MAX_FEE", parseFee);
  const flagCaps = perNetwork(flags.maxFee, "--max-fee", parseFee);
  const budget = (v: unknown, source: string) => parseGas(v, source);
  const budgets = layered([
    perNetwork(file.wastedGasBudget, where("wastedGasBudget"), budget),
    perNetwork(
      env.FACILITATOR_WASTED_GAS_BUDGET || undefined,
      "FACILITATOR_WASTED_GAS_BUDGET",
      budget,
    ),
  ]);
  const caps = layered([fileCaps, envCaps, flagCaps]);
  return {
    maxFeeWei: caps.all,
    maxFeeWeiByChain: caps.byChain,
    gasBounds: gasBounds(file.gasBounds, where("gasBounds")),
    wastedGasBudget: budgets.all,
    wastedGasBudgetByChain: budgets.byChain,
    allowedAssets: allowedAssets(file.allowedAssets, where("allowedAssets")),
  };
}
