/** One of our devnets: its TestUSDC code where the devnet puts it (no real chain has it there). */
import type { PublicClient } from "viem";
import { testUsdcRuntimeBytecode } from "./artifacts.js";
import { usdcAddressFor } from "./setup.js";

export async function isDevnetChain(client: PublicClient, chainId: number): Promise<boolean> {
  return isTestUsdcCode(await client.getCode({ address: usdcAddressFor(chainId) }));
}

/** Whether `code`, read where the devnet puts its token, is the devnet's TestUSDC. */
export const isTestUsdcCode = (code: string | undefined): boolean =>
  code?.toLowerCase() === testUsdcRuntimeBytecode.toLowerCase();
