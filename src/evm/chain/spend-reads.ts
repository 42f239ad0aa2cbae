/** Reads what a settlement will spend from: a payer's balance or allowance, and our receipts. */
import { type Hex, parseAbi } from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import type { ChainAccess } from "./access.js";
import type { Spend } from "./inflight.js";

const erc20Abi = parseAbi([
  "function balanceOf(address owner) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
]);

/** The payer's balance, or for a spend through an allowance that allowance, at `blockNumber`. */
export function readAvailable(ctx: ChainAccess, spend: Spend, blockNumber: bigint) {
  return spend.spender
    ? ctx.client.readContract({
        address: spend.token,
        abi: erc20Abi,
        functionName: "allowance",
        args: [spend.owner, spend.spender],
        blockNumber,
      })
    : ctx.client.readContract({
        address: spend.token,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [spend.owner],
        blockNumber,
      });
}

/** The block any of `hashes` was mined in, if one was. */
export async function minedIn(
  ctx: ChainAccess,
  hashes: readonly Hex[],
): Promise<bigint | undefined> {
  for (const hash of hashes) {
    const receipt = await ctx.client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt) return receipt.blockNumber;
  }
  return undefined;
}

export function shortfall(spend: Spend, have: bigint, held: bigint): Failure {
  if (spend.spender) {
    return failure(
      "allowance_required",
      `the payer allows ${spend.spender} ${have}${inFlight(held)} and this payment needs ${spend.amount}`,
    );
  }
  return balanceShortfall("the payer", have, held, spend.amount);
}

/** `holder` has `have`, `held` of it already in flight with us, and the payment needs `needs`. */
export function balanceShortfall(holder: string, have: bigint, held: bigint, needs: bigint) {
  return failure(
    "insufficient_funds",
    `${holder} holds ${have}${inFlight(held)} and this payment needs ${needs}`,
  );
}

function inFlight(held: bigint): string {
  return held > 0n ? `, ${held} of it is already being settled with us,` : "";
}
