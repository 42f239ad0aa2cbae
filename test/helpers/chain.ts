/** Reading the devnet chain from tests. */
import { type Address, createPublicClient, createTestClient, createWalletClient, http } from "viem";
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

/**
 * Waits until `from` has nothing left in the devnet's pool (every transaction it broadcast is
 * mined), polling every 50 ms: a test's "nothing else was sent" then reads a settled chain without
 * sleeping out block times.
 */
export async function poolDrained(devnet: DevnetInfo, from: Address, timeoutMs = 30_000) {
  const chain = chainOf(devnet);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [pending, latest] = await Promise.all([
      chain.getTransactionCount({ address: from, blockTag: "pending" }),
      chain.getTransactionCount({ address: from, blockTag: "latest" }),
    ]);
    if (pending === latest) return;
    if (Date.now() > until) throw new Error(`${from} still has ${pending - latest} in the pool`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Mines a block every `everyMs` on a devnet mined by hand until `work` settles; its result. */
export async function mineWhile<T>(rpcUrl: string, work: Promise<T>, everyMs = 50): Promise<T> {
  const anvil = createTestClient({ mode: "anvil", transport: http(rpcUrl) });
  let done = false;
  const result = work.finally(() => {
    done = true;
  });
  while (!done) {
    await anvil.mine({ blocks: 1 });
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return result;
}
