/** Permit2 on the devnet: payers have not approved it (approvePermit2 does); what it consumed. */
import { type Address, encodeFunctionData, erc20Abi, maxUint256 } from "viem";
import type { DevAccount } from "./accounts.js";
import { permit2Abi } from "./artifacts.js";
import { type DevnetInfo, type DevnetLike, devnetReader, runDevnetCalls } from "./setup.js";

/** `owner` approves Permit2 for `amount` (default: unlimited) of `token`, in a transaction it pays. */
export async function approvePermit2(
  devnet: DevnetLike,
  owner: DevAccount,
  token: Address,
  amount: bigint = maxUint256,
): Promise<void> {
  const approve = {
    abi: erc20Abi,
    functionName: "approve",
    args: [devnet.permit2, amount],
  } as const;
  await runDevnetCalls(devnet, [{ to: token, data: encodeFunctionData(approve) }], owner);
}

/** How much of `token` Permit2 may move for `owner`. */
export function permit2Allowance(devnet: DevnetInfo, owner: Address, token: Address) {
  return devnetReader(devnet).readContract({
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
  const word = await devnetReader(devnet).readContract({
    address: devnet.permit2,
    abi: permit2Abi,
    functionName: "nonceBitmap",
    args: [owner, nonce >> 8n],
  });
  return ((word >> (nonce & 0xffn)) & 1n) === 1n;
}
