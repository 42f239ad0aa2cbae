/**
 * Permit2 on the devnet: payers start WITHOUT an approval of Permit2 on any token (so the
 * "allowance missing" path stays testable); a test or a sample approves explicitly with
 * approvePermit2. Also reads of what Permit2 has consumed.
 */
import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  http,
  maxUint256,
} from "viem";
import type { DevAccount } from "./accounts.js";
import { permit2Abi } from "./artifacts.js";
import { type DevnetInfo, devnetChain, type MiningMode, runSetupCalls } from "./setup.js";

type DevnetLike = DevnetInfo & { anvil?: { mining: "auto" | "manual" } };

function miningOf(devnet: DevnetLike): MiningMode {
  return devnet.anvil?.mining;
}

function readerFor(devnet: DevnetInfo) {
  return createPublicClient({
    chain: devnetChain(devnet.rpcUrl, devnet.chainId),
    transport: http(devnet.rpcUrl, { retryCount: 0 }),
  });
}

/**
 * `owner` approves Permit2 to spend `amount` (default: unlimited) of `token`, with an ordinary
 * transaction that `owner` sends and pays for (dev accounts have ETH). Resolves once mined.
 */
export async function approvePermit2(
  devnet: DevnetLike,
  owner: DevAccount,
  token: Address,
  amount: bigint = maxUint256,
): Promise<void> {
  const call = {
    to: token,
    data: encodeFunctionData({
      abi: erc20Abi,
      functionName: "approve",
      args: [devnet.permit2, amount],
    }),
  };
  await runSetupCalls(devnet.rpcUrl, devnet.chainId, [call], miningOf(devnet), owner);
}

/** How much of `token` Permit2 may move for `owner`. */
export function permit2Allowance(devnet: DevnetInfo, owner: Address, token: Address) {
  return readerFor(devnet).readContract({
    address: token,
    abi: erc20Abi,
    functionName: "allowance",
    args: [owner, devnet.permit2],
  });
}

/** Whether Permit2 has used (or `owner` has cancelled) the unordered nonce `nonce`. */
export async function permit2NonceUsed(
  devnet: DevnetInfo,
  owner: Address,
  nonce: bigint,
): Promise<boolean> {
  const word = await readerFor(devnet).readContract({
    address: devnet.permit2,
    abi: permit2Abi,
    functionName: "nonceBitmap",
    args: [owner, nonce >> 8n],
  });
  return ((word >> (nonce & 0xffn)) & 1n) === 1n;
}
