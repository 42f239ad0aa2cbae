/** doctor's look at what a settlement may cost on each chain (fee cap, gas bounds, budget) and at the deny list. */
import { formatGwei } from "viem";
import { feeCapFor, nativeAmount } from "../../../evm/chain/fees.js";
import { DEFAULT_WASTED_GAS_BUDGET } from "../../../evm/chain/gas-at-risk.js";
import { gasBoundsFor, grouped } from "../../../evm/chain/gas-bounds.js";
import { caip2 } from "../../../protocol/networks.js";
import { UsageError } from "../../io/errors.js";
import type { CliConfig } from "../../settings/config.js";
import { readDenyList } from "../../settings/deny-list-file.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import { type ChainSeen, type Finding, finding } from "./doctor-checks.js";

const maxFee = SETTINGS.maxFee;

export async function checkLimits(
  config: CliConfig,
  chains: readonly ChainSeen[],
): Promise<Finding[]> {
  const { limits } = config;
  return Promise.all(
    chains.map(async ({ chainId, client }): Promise<Finding> => {
      const network = caip2(chainId);
      const cap = feeCapFor(chainId, limits);
      const bounds = gasBoundsFor(chainId, limits.gasBounds);
      const budget =
        limits.wastedGasBudgetByChain[chainId] ??
        limits.wastedGasBudget ??
        DEFAULT_WASTED_GAS_BUDGET;
      const allowed = limits.allowedAssets[chainId];
      const message = [
        `${network}: a settlement may cost up to ${nativeAmount(chainId, cap.wei)} (${cap.configured ? "configured" : "the default"})`,
        `gas at most ${grouped(bounds.eip3009)} for EIP-3009, ${grouped(bounds.permit2)} for Permit2, ${grouped(bounds.upto)} for upto (+${grouped(bounds.contractWallet)} from a contract wallet, +${grouped(bounds.walletDeployment)} to deploy one)`,
        `wasted gas budget ${grouped(budget)} per hour`,
        allowed
          ? `only ${allowed.length} listed asset${allowed.length === 1 ? "" : "s"}`
          : "any asset",
      ].join("; ");
      const price = await client.estimateFeesPerGas({ chain: null }).then(
        (fees) => fees.maxFeePerGas,
        () => undefined,
      );
      const ordinary = price === undefined ? undefined : bounds.eip3009 * price;
      if (ordinary !== undefined && price !== undefined && ordinary > cap.wei) {
        return finding(
          "limits",
          "warning",
          `${message}. At today's ${formatGwei(price)} gwei an EIP-3009 settle could cost ${nativeAmount(chainId, ordinary)}: over the cap, settles are refused (fee_cap_exceeded)`,
          `wait for fees to fall, or raise the cap: ${flagName(maxFee.flag)} ${network}=<amount>, ${maxFee.env} or ${maxFee.key} in the config file`,
        );
      }
      return finding("limits", "ok", message);
    }),
  );
}

/** "3 h", "2 d": how long ago, in its largest whole unit. */
function ageOf(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const units: [number, string][] = [
    [86_400, "d"],
    [3_600, "h"],
    [60, "min"],
  ];
  for (const [size, unit] of units)
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit}`;
  return `${seconds} s`;
}

export function checkDenyList(config: CliConfig, now = Date.now()): Finding[] {
  const file = config.denyList;
  if (file === undefined) return [];
  try {
    const { list, modifiedMs } = readDenyList(file);
    const modified = new Date(modifiedMs).toISOString();
    const message = `${file}: ${list.size} address${list.size === 1 ? "" : "es"}, changed ${ageOf(now - modifiedMs)} ago (${modified}); their payments are refused (address_denied)`;
    if (list.size > 0) return [finding("deny", "ok", message)];
    const fix = "one EVM (0x…) or Solana address a line; serve re-reads the file when it changes";
    return [finding("deny", "warning", `${message}: it is empty`, fix)];
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return [finding("deny", "error", error.message)];
  }
}
