/**
 * What bench:batch reads from the devnet directly (not through a facilitator): a transaction's
 * gas from its receipt, a token balance, and a channel's balance and total claimed.
 */
import { createPublicClient, erc20Abi, type Hex, http, type PublicClient } from "viem";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import type { Devnet } from "../src/evm/devnet/index.js";
import { fail } from "./batch-run-log.js";

let readClient: PublicClient | undefined;
/** One read-only client on the devnet for the whole run. */
export function reader(chain: Devnet): PublicClient {
  readClient ??= createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
  return readClient;
}

/** A transaction's gas from its receipt; a reverted one is a failure at `where`. */
export async function gasUsed(chain: Devnet, hash: Hex, where: string): Promise<bigint> {
  const receipt = await reader(chain).getTransactionReceipt({ hash });
  if (receipt.status !== "success") fail(where, `transaction ${hash} reverted`);
  return receipt.gasUsed;
}

/** What an account holds of the devnet's token. */
export const tokenBalance = (chain: Devnet, who: `0x${string}`) =>
  reader(chain).readContract({
    address: chain.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

/** A channel's balance and what has been claimed from it, from the settlement contract. */
export async function channelTotals(chain: Devnet, id: Hex) {
  const [balance, totalClaimed] = await reader(chain).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });
  return { balance, totalClaimed };
}
