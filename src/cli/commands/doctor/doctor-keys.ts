/** doctor's look at the keys: the settlement accounts and their gas, the receiver authorizer, the Solana fee payers. */
import { privateKeyToAccount } from "viem/accounts";
import { gasAmount } from "../../../protocol/amounts.js";
import { caip2, knownNetwork } from "../../../protocol/networks.js";
import { firstLine } from "../../../protocol/words.js";
import { type RpcRegistry, unreachableReason } from "../../../rpc/rpc.js";
import { lamportsOf } from "../../../svm/exact/rpc.js";
import type { CliConfig } from "../../settings/config.js";
import { keysOrNone, receiverAuthorizerOf } from "../../settings/config-keys.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import {
  type ChainSeen,
  errorFinding,
  type Finding,
  finding,
  type Level,
} from "./doctor-checks.js";

/** Below this much native token, a settlement account is low on gas (about a few settles). */
const LOW_GAS_WEI = 10n ** 15n;
/** Below this, a fee payer has room for only a few hundred settlements (5,000 lamports and up each). */
const LOW_LAMPORTS = 10_000_000n;

/** What a key loader gives, or the error it throws (a bad key or key file): a finding to report. */
function tryLoad<T>(load: () => T): T | Error {
  try {
    return load();
  } catch (error) {
    return error as Error;
  }
}

export async function checkKeys(
  config: CliConfig,
  chains: readonly ChainSeen[],
): Promise<Finding[]> {
  const keys = tryLoad(config.loadPrivateKeys);
  if (keys instanceof Error) return [errorFinding("key", keys)];
  if (keys.length === 0) {
    if (chains.length === 0 && keysOrNone(config.loadSvmFeePayers).length > 0) {
      const message =
        "no EVM settlement key, and no EVM chain served: Solana settles with its fee payer";
      return [finding("key", "ok", message)];
    }
    const fix = `pass ${flagName(SETTINGS.privateKeys.flag)} FILE or set ${SETTINGS.privateKeys.env} (never a flag value)`;
    const message = "no settlement key: verify works, EVM settle answers settlement_failed";
    return [finding("key", "warning", message, fix)];
  }
  const accounts = keys.map((key) => privateKeyToAccount(key).address);
  const counted =
    accounts.length === 1 ? "1 settlement account" : `${accounts.length} settlement accounts`;
  const findings = [finding("key", "ok", `${counted}: ${accounts.join(", ")}`)];
  for (const chain of chains) {
    const network = caip2(chain.chainId);
    for (const account of accounts) {
      findings.push(
        await balanceFinding(
          () => chain.client.getBalance({ address: account }),
          LOW_GAS_WEI,
          (balance) => `${account} holds ${nativeBalance(chain, balance)} for gas`,
          `send it some of ${network}'s native token: settlements cost gas`,
          (error) =>
            `${account}'s balance on ${network} could not be read (${unreachableReason(error)})`,
        ),
      );
    }
  }
  return findings;
}

/** A gas balance read: none is an error, below `low` a warning; a failed read, unreachable. */
async function balanceFinding(
  read: () => Promise<bigint>,
  low: bigint,
  holds: (balance: bigint) => string,
  fix: string,
  unread: (error: unknown) => string,
): Promise<Finding> {
  try {
    const balance = await read();
    const level: Level = balance === 0n ? "error" : balance < low ? "warning" : "ok";
    return finding("key", level, holds(balance), level === "ok" ? undefined : fix);
  } catch (error) {
    return finding("key", "unreachable", unread(error));
  }
}

/** "9999.9994 ETH on eip155:1": to 4 decimals, with the symbol where it is known (a devnet's: ETH). */
function nativeBalance(chain: ChainSeen, wei: bigint): string {
  const symbol = knownNetwork(chain.chainId)?.native ?? (chain.devnet ? "ETH" : undefined);
  const amount = gasAmount(wei, 18);
  return symbol
    ? `${amount} ${symbol} on ${caip2(chain.chainId)}`
    : `${amount} of ${caip2(chain.chainId)}'s native token`;
}

/** The batch-settlement receiver authorizer: configured or not, its address, never its key. */
export function checkReceiverAuthorizer(config: CliConfig): Finding[] {
  const key = tryLoad(config.loadReceiverAuthorizerKey);
  if (key instanceof Error) return [errorFinding("key", key)];
  if (key === undefined) {
    const message =
      "no receiver authorizer: batch-settlement sellers sign their own claims and refunds";
    return [finding("key", "ok", message)];
  }
  try {
    const account = receiverAuthorizerOf(key, keysOrNone(config.loadPrivateKeys));
    const message = `receiver authorizer ${account?.address}: signs batch-settlement claims and refunds (needs no gas)`;
    return [finding("key", "ok", message)];
  } catch (error) {
    const { flag, env } = SETTINGS.receiverAuthorizerKey;
    const fix = `give the receiver authorizer a key of its own (${flagName(flag)} FILE or ${env})`;
    return [finding("key", "error", (error as Error).message, fix)];
  }
}

/** The Solana fee payer: does it hold SOL for fees on each Solana cluster served. */
export async function checkSolanaFeePayers(
  rpc: RpcRegistry,
  config: CliConfig,
): Promise<Finding[]> {
  const networks = await rpc.servedSolanaNetworks();
  if (networks.length === 0) return [];
  const feePayers = tryLoad(config.loadSvmFeePayers);
  if (feePayers instanceof Error) return [errorFinding("key", feePayers)];
  const addresses = feePayers.map((key) => key.address);
  if (addresses.length === 0) {
    const svm = SETTINGS.svmFeePayers;
    const message = `no Solana fee payer key: ${networks.join(", ")} is not listed on /supported and its payments are refused`;
    const fix = `set ${svm.envFile} (or ${flagName(svm.flag)}, or ${svm.key} in the config file)`;
    return [finding("key", "warning", message, fix)];
  }
  const findings: Finding[] = [];
  for (const network of networks) {
    const client = await rpc.solanaClient(network);
    for (const address of addresses) {
      findings.push(
        await balanceFinding(
          () => lamportsOf(client, address),
          LOW_LAMPORTS,
          (lamports) =>
            `Solana fee payer ${address} holds ${gasAmount(lamports, 9)} SOL on ${network} for fees`,
          `send it some SOL on ${network}: it pays every fee`,
          (error) =>
            `Solana fee payer ${address}'s balance on ${network} could not be read (${firstLine(error)})`,
        ),
      );
    }
  }
  return findings;
}
