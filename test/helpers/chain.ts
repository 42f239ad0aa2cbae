/** Reading the devnet chain from tests. */
import { type Address, createPublicClient, http } from "viem";
import { testUsdcAbi } from "../../src/devnet/artifacts.js";
import type { DevnetInfo } from "../../src/devnet/index.js";

export function chainOf(devnet: DevnetInfo) {
  return createPublicClient({ transport: http(devnet.rpcUrl) });
}

/** The test USDC balance of `who`, in atomic units. */
export function tokenBalance(devnet: DevnetInfo, who: Address): Promise<bigint> {
  return chainOf(devnet).readContract({
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "balanceOf",
    args: [who],
  });
}
