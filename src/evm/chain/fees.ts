/** What a settlement transaction pays per gas: estimated once a second per chain, capped, bumped. */
import {
  formatEther,
  formatGwei,
  hexToBigInt,
  parseEther,
  type TransactionSerializable,
} from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2, DEFAULT_SETTLE_FEE_CAP, knownNetwork } from "../../protocol/networks.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";
import { grouped } from "./gas-bounds.js";

export type Fees =
  | {
      readonly type: "eip1559";
      readonly maxFeePerGas: bigint;
      readonly maxPriorityFeePerGas: bigint;
    }
  | { readonly type: "legacy"; readonly gasPrice: bigint };

/** Nodes want at least +10 % to accept a replacement; +25 % clears that with room. */
const REPLACEMENT_BUMP_PERCENT = 125n;
/** Fee estimates are reused this long per chain: about a block on fast chains. */
const FEE_CACHE_MS = 1_000;
const feeCache = new WeakMap<object, { at: number; fees: Promise<Fees> }>();

export function estimateFees(ctx: ChainAccess): Promise<Fees> {
  const cached = feeCache.get(ctx.client);
  if (cached && Date.now() - cached.at < FEE_CACHE_MS) return cached.fees;
  const fees = readFees(ctx);
  feeCache.set(ctx.client, { at: Date.now(), fees });
  fees.catch(() => feeCache.delete(ctx.client));
  return fees;
}

/** viem's default: the max fee is the base fee times 1.2 plus the tip. */
const BASE_FEE_PERCENT = 120n;

async function readFees(ctx: ChainAccess): Promise<Fees> {
  try {
    return await eip1559Fees(ctx);
  } catch (error) {
    if (isUnreachable(error)) throw error;
    return { type: "legacy", gasPrice: await ctx.client.getGasPrice() };
  }
}

/** viem's estimateFeesPerGas with its two reads made together: one round trip, the same fees. */
async function eip1559Fees(ctx: ChainAccess): Promise<Fees> {
  const { client } = ctx;
  const tip = client.request({ method: "eth_maxPriorityFeePerGas" }).then(
    (hex) => ({ ok: true as const, value: hexToBigInt(hex) }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const { baseFeePerGas: baseFee } = await client.getBlock({ blockTag: "latest" });
  if (typeof baseFee !== "bigint") throw new Error("the chain's blocks have no base fee");
  const asked = await tip;
  const gasPrice = asked.ok ? 0n : await client.getGasPrice();
  const maxPriorityFeePerGas = asked.ok
    ? asked.value
    : gasPrice > baseFee
      ? gasPrice - baseFee
      : 0n;
  const maxFeePerGas = (baseFee * BASE_FEE_PERCENT) / 100n + maxPriorityFeePerGas;
  return { type: "eip1559", maxFeePerGas, maxPriorityFeePerGas };
}

/** A signed transaction's fees raised for its replacement. */
export function bumpedFees(tx: TransactionSerializable): Fees {
  const up = (value = 0n) => (value * REPLACEMENT_BUMP_PERCENT) / 100n + 1n;
  if (tx.type === "legacy") return { type: "legacy", gasPrice: up(tx.gasPrice) };
  const maxPriorityFeePerGas = up(tx.maxPriorityFeePerGas);
  return { type: "eip1559", maxFeePerGas: up(tx.maxFeePerGas), maxPriorityFeePerGas };
}

/** The fee cap on `chainId`: configured per chain, else for all, else the network's default. */
export function feeCapFor(
  chainId: number,
  configured: {
    readonly maxFeeWei?: bigint | undefined;
    readonly maxFeeWeiByChain?: Readonly<Record<number, bigint>> | undefined;
  },
): { readonly wei: bigint; readonly configured: boolean } {
  const wei = configured.maxFeeWeiByChain?.[chainId] ?? configured.maxFeeWei;
  if (wei !== undefined) return { wei, configured: true };
  return {
    wei: parseEther(knownNetwork(chainId)?.feeCap ?? DEFAULT_SETTLE_FEE_CAP),
    configured: false,
  };
}

export function nativeAmount(chainId: number, wei: bigint): string {
  return `${formatEther(wei)} ${knownNetwork(chainId)?.native ?? "of the native token"}`;
}

/** A fee spike passes: a refused settle may be tried again in a while. */
const FEE_CAP_RETRY_SECONDS = 30;

export function overCap(ctx: ChainAccess, gas: bigint, fees: Fees): Failure | undefined {
  const cap = ctx.feeCapWei;
  const price = fees.type === "eip1559" ? fees.maxFeePerGas : fees.gasPrice;
  const cost = gas * price;
  if (cap === undefined || cost <= cap) return undefined;
  const network = caip2(ctx.chainId);
  return failure(
    "fee_cap_exceeded",
    `the settlement could cost up to ${nativeAmount(ctx.chainId, cost)} (${grouped(gas)} gas at ${formatGwei(price)} gwei), over the fee cap of ${nativeAmount(ctx.chainId, cap)} for ${network}; nothing was sent. Retry when fees fall, or raise the cap: --max-fee ${network}=<amount>, FACILITATOR_MAX_FEE or maxFee in the config file`,
    { retryAfterSeconds: FEE_CAP_RETRY_SECONDS },
  );
}

/** After a base-fee refusal: twice the next base fee plus the tip, capped, or the cap's refusal. */
export async function repriced(ctx: ChainAccess, gas: bigint, fees: Fees): Promise<Fees | Failure> {
  const history = await ctx.client.getFeeHistory({ blockCount: 1, rewardPercentiles: [] });
  const next = history.baseFeePerGas.at(-1) ?? 0n;
  const tip = fees.type === "eip1559" ? fees.maxPriorityFeePerGas : 0n;
  const capPerGas = ctx.feeCapWei === undefined ? undefined : ctx.feeCapWei / gas;
  let price = next * 2n + tip;
  if (capPerGas !== undefined && price > capPerGas) price = capPerGas;
  const at = (perGas: bigint): Fees =>
    fees.type === "eip1559"
      ? { type: "eip1559", maxFeePerGas: perGas, maxPriorityFeePerGas: tip }
      : { type: "legacy", gasPrice: perGas };
  if (price < next + tip) return overCap(ctx, gas, at(next + tip)) ?? at(next + tip);
  return at(price);
}
