/**
 * Is the chain behind an RPC one of our devnets? Yes when the devnet's TestUSDC code sits where
 * the devnet puts it for that chain id: no real chain has this project's test token there, and it
 * needs no file from the devnet (any devnet, any port, also one a test started).
 */
import type { PublicClient } from "viem";
import { testUsdcRuntimeBytecode } from "./artifacts.js";
import { usdcAddressFor } from "./setup.js";

export async function isDevnetChain(client: PublicClient, chainId: number): Promise<boolean> {
  return isTestUsdcCode(await client.getCode({ address: usdcAddressFor(chainId) }));
}

/** Whether `code`, read where the devnet puts its token, is the devnet's TestUSDC. */
export const isTestUsdcCode = (code: string | undefined): boolean =>
  code?.toLowerCase() === testUsdcRuntimeBytecode.toLowerCase();
