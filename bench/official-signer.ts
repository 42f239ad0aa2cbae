/**
 * The x402 reference facilitator's signer on the bench's devnet, as the SDK's examples build it:
 * one viem wallet client extended with public actions, wrapped by `toFacilitatorEvmSigner`, with
 * `privateKeyToAccount(key, { nonceManager })` so concurrent settles from one key take consecutive
 * nonces. Shared by bench/reference-server.ts (exact) and bench/batch-official-facilitator.ts.
 */
import { toFacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, defineChain, type Hex, http, nonceManager, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/** The devnet mines a heartbeat block every second; viem derives its polling interval from this. */
const DEVNET_BLOCK_TIME_MS = 1_000;

/** One eth_chainId at start-up: the chain definition (like baseSepolia in the examples) needs it. */
async function chainIdOf(url: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(10_000),
  });
  const answer = (await response.json()) as { result?: string };
  if (typeof answer.result !== "string") throw new Error("eth_chainId gave no result");
  return Number(BigInt(answer.result));
}

export async function officialSigner(rpcUrl: string, key: Hex) {
  const chainId = await chainIdOf(rpcUrl);
  const chain = defineChain({
    id: chainId,
    name: `devnet ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    blockTime: DEVNET_BLOCK_TIME_MS,
  });
  const account = privateKeyToAccount(key, { nonceManager });
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) }).extend(
    publicActions,
  );
  // The forwarding the reference examples do (args defaulted to [], gas passed through).
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    // biome-ignore lint/suspicious/noExplicitAny: forwarding viem calls as the SDK's examples do.
    readContract: (args: any) => wallet.readContract({ ...args, args: args.args ?? [] }),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    verifyTypedData: (args: any) => wallet.verifyTypedData(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    writeContract: (args: any) => wallet.writeContract({ ...args, args: args.args ?? [] }),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    sendTransaction: (args: any) => wallet.sendTransaction(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    waitForTransactionReceipt: (args: any) => wallet.waitForTransactionReceipt(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    getCode: (args: any) => wallet.getCode(args),
  });
  return { signer, network: `eip155:${chainId}` as const };
}
