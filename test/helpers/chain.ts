/** Reading the devnet chain from tests. */
import { type Address, createPublicClient, createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../src/evm/devnet/artifacts.js";
import type { DevAccount, DevnetInfo } from "../../src/evm/devnet/index.js";

export function chainOf(devnet: DevnetInfo) {
  return createPublicClient({ transport: http(devnet.rpcUrl) });
}

/** The test USDC balance of `who` (or of another devnet token), in atomic units. */
export function tokenBalance(
  devnet: DevnetInfo,
  who: Address,
  token: Address = devnet.token.address,
): Promise<bigint> {
  return chainOf(devnet).readContract({
    address: token,
    abi: testUsdcAbi,
    functionName: "balanceOf",
    args: [who],
  });
}

/** A new payer holding exactly `units` of a test token (test USDC by default) and no ETH. */
export async function payerHolding(
  devnet: DevnetInfo,
  units: bigint,
  token: Address = devnet.token.address,
): Promise<DevAccount> {
  const privateKey = generatePrivateKey();
  const { address } = privateKeyToAccount(privateKey);
  const funder = devnet.payers[0];
  if (!funder) throw new Error("the devnet has no payers");
  const wallet = createWalletClient({
    account: privateKeyToAccount(funder.privateKey),
    transport: http(devnet.rpcUrl),
  });
  const hash = await wallet.writeContract({
    address: token,
    abi: testUsdcAbi,
    functionName: "transfer",
    args: [address, units],
    chain: null,
  });
  await chainOf(devnet).waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return { address, privateKey } as DevAccount;
}
