/**
 * Puts the devnet's contracts on a running anvil (with anvil_setCode, no deployment transaction)
 * and funds the payers with test USDC.
 */
import {
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  getAddress,
  type Hash,
  type Hex,
  http,
  type PublicClient,
  type TestClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  type DevAccount,
  facilitatorAccount,
  funderAccount,
  payeeAccount,
  payerAccounts,
} from "./accounts.js";
import { multicall3RuntimeBytecode, testUsdcAbi, testUsdcRuntimeBytecode } from "./artifacts.js";

/** Where the canonical Multicall3 lives on every chain; ours is placed at the same address. */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** Base Sepolia's USDC: on chain id 84532 TestUSDC goes here, so real payloads verify offline. */
export const BASE_SEPOLIA_USDC_ADDRESS: Address = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/** Where TestUSDC goes on any other chain id. */
export const DEFAULT_USDC_ADDRESS: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

export const BASE_SEPOLIA_CHAIN_ID = 84532;

/** USDC minted to each payer: 1,000,000 USDC (6 decimals). */
export const PAYER_USDC_BALANCE = 1_000_000n * 10n ** 6n;

export interface DevnetToken {
  address: Address;
  name: "USDC";
  version: "2";
  decimals: 6;
}

export interface DevnetInfo {
  rpcUrl: string;
  chainId: number;
  /** CAIP-2 network id, as x402 v2 uses. */
  network: `eip155:${number}`;
  /** The x402 v1 network name, when the chain id has one ("base-sepolia" for 84532). */
  v1Network?: string;
  token: DevnetToken;
  multicall3: Address;
  facilitator: DevAccount;
  payers: DevAccount[];
  payee: DevAccount;
}

/** Where TestUSDC is placed for a chain id. */
export function usdcAddressFor(chainId: number): Address {
  return chainId === BASE_SEPOLIA_CHAIN_ID ? BASE_SEPOLIA_USDC_ADDRESS : DEFAULT_USDC_ADDRESS;
}

/** A viem chain for a devnet. */
export function devnetChain(rpcUrl: string, chainId: number): Chain {
  return defineChain({
    id: chainId,
    name: `devnet ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

/** A local node answers at once: poll often instead of viem's default 4 s. */
const POLLING_INTERVAL_MS = 50;

interface Clients {
  rpcUrl: string;
  chain: Chain;
  publicClient: PublicClient<Transport, Chain>;
  testClient: TestClient<"anvil", Transport, Chain>;
  funder: WalletClient;
}

function clientsFor(rpcUrl: string, chainId: number): Clients {
  const chain = devnetChain(rpcUrl, chainId);
  const transport = http(rpcUrl, { retryCount: 0 });
  return {
    rpcUrl,
    chain,
    publicClient: createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    testClient: createTestClient({
      chain,
      transport,
      mode: "anvil",
      pollingInterval: POLLING_INTERVAL_MS,
    }),
    funder: createWalletClient({
      chain,
      transport,
      account: privateKeyToAccount(funderAccount.privateKey),
      pollingInterval: POLLING_INTERVAL_MS,
    }),
  };
}

// Set-up transactions all come from the funder account; one queue per node keeps their nonces
// in order even when callers run set-up steps concurrently.
const funderQueues = new Map<string, Promise<unknown>>();

function inFunderQueue<T>(rpcUrl: string, task: () => Promise<T>): Promise<T> {
  const previous = funderQueues.get(rpcUrl) ?? Promise.resolve();
  const next = previous.then(task, task);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  funderQueues.set(rpcUrl, settled);
  void settled.then(() => {
    if (funderQueues.get(rpcUrl) === settled) funderQueues.delete(rpcUrl);
  });
  return next;
}

export interface SetupCall {
  to: Address;
  data: Hex;
}

/** How the node mines: "auto"/"manual" as started by startAnvil, or undefined if not known. */
export type MiningMode = "auto" | "manual" | undefined;

/** If the mining mode is not known and receipts have not come after this long, mine a block. */
const UNKNOWN_MODE_MINE_AFTER_MS = 1_000;

/**
 * Sends the calls from the funder account (consecutive nonces), gets them mined and waits for
 * every receipt; throws if any of them reverted.
 *
 * anvil_getAutomine cannot tell: it answers false under --mixed-mining as under --no-mining.
 * So with mining "manual" we mine a block at once; with "auto" we wait (automine, or the
 * heartbeat block at the latest); with an unknown mode we mine a block if nothing came in 1 s.
 */
async function sendFromFunder(
  clients: Clients,
  calls: readonly SetupCall[],
  mining: MiningMode,
): Promise<void> {
  const { rpcUrl, publicClient, testClient, funder, chain } = clients;
  const account = funder.account;
  if (!account) throw new Error("funder wallet has no account");
  await inFunderQueue(rpcUrl, async () => {
    const nonce = await publicClient.getTransactionCount({
      address: account.address,
      blockTag: "pending",
    });
    const hashes: Hash[] = [];
    for (const [i, call] of calls.entries()) {
      hashes.push(
        await funder.sendTransaction({
          account,
          chain,
          to: call.to,
          data: call.data,
          nonce: nonce + i,
        }),
      );
    }
    if (mining === "manual") await testClient.mine({ blocks: 1 });
    const fallback =
      mining === undefined
        ? setTimeout(() => {
            testClient.mine({ blocks: 1 }).catch(() => undefined);
          }, UNKNOWN_MODE_MINE_AFTER_MS)
        : undefined;
    try {
      const receipts = await Promise.all(
        hashes.map((hash) => publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 })),
      );
      const failed = receipts.find((r) => r.status !== "success");
      if (failed) throw new Error(`devnet set-up transaction ${failed.transactionHash} reverted`);
    } finally {
      clearTimeout(fallback);
    }
  });
}

/** A `TestUSDC.mint(to, amount)` call. */
export function mintCall(token: Address, to: Address, amount: bigint): SetupCall {
  return {
    to: token,
    data: encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [to, amount] }),
  };
}

/** Runs set-up transactions from the devnet's funder account (exported for deployErc1271Wallet). */
export async function runSetupCalls(
  rpcUrl: string,
  chainId: number,
  calls: readonly SetupCall[],
  mining?: MiningMode,
): Promise<void> {
  await sendFromFunder(clientsFor(rpcUrl, chainId), calls, mining);
}

export interface PrepareDevnetOptions {
  /** How the node mines, if known (startDevnet passes it); see sendFromFunder. */
  mining?: "auto" | "manual";
}

/**
 * Places TestUSDC and Multicall3 on the anvil node at `rpcUrl` and mints 1,000,000 USDC to each
 * payer. The node must be anvil (it uses anvil_setCode) with the default dev accounts.
 */
export async function prepareDevnet(
  rpcUrl: string,
  chainId: number,
  options: PrepareDevnetOptions = {},
): Promise<DevnetInfo> {
  const clients = clientsFor(rpcUrl, chainId);
  const actualChainId = await clients.publicClient.getChainId();
  if (actualChainId !== chainId) {
    throw new Error(`prepareDevnet: ${rpcUrl} has chain id ${actualChainId}, expected ${chainId}`);
  }
  const tokenAddress = usdcAddressFor(chainId);
  await clients.testClient.setCode({ address: tokenAddress, bytecode: testUsdcRuntimeBytecode });
  await clients.testClient.setCode({
    address: MULTICALL3_ADDRESS,
    bytecode: multicall3RuntimeBytecode,
  });
  await sendFromFunder(
    clients,
    payerAccounts.map((payer) => mintCall(tokenAddress, payer.address, PAYER_USDC_BALANCE)),
    options.mining,
  );
  return {
    rpcUrl,
    chainId,
    network: `eip155:${chainId}`,
    ...(chainId === BASE_SEPOLIA_CHAIN_ID ? { v1Network: "base-sepolia" } : {}),
    token: { address: getAddress(tokenAddress), name: "USDC", version: "2", decimals: 6 },
    multicall3: MULTICALL3_ADDRESS,
    facilitator: facilitatorAccount,
    payers: [...payerAccounts],
    payee: payeeAccount,
  };
}
