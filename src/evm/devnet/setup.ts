/**
 * Puts the devnet's contracts on a running anvil (with anvil_setCode, no deployment transaction)
 * and funds the payers with the test tokens.
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
  type LocalAccount,
  type PublicClient,
  type TestClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from "../exact/permit2-encoding.js";
import {
  type DevAccount,
  facilitatorAccount,
  funderAccount,
  payeeAccount,
  payerAccounts,
} from "./accounts.js";
import {
  erc3009DepositCollectorRuntimeBytecode,
  multicall3Abi,
  multicall3RuntimeBytecode,
  permit2DepositCollectorRuntimeBytecode,
  permit2RuntimeBytecode,
  testPermitTokenRuntimeBytecode,
  testPlainTokenRuntimeBytecode,
  testSmartWalletFactoryRuntimeBytecode,
  testUsdcAbi,
  testUsdcRuntimeBytecode,
  x402BatchSettlementRuntimeBytecode,
  x402ExactPermit2ProxyRuntimeBytecode,
  x402UptoPermit2ProxyRuntimeBytecode,
} from "./artifacts.js";

/** Where the canonical Multicall3 lives on every chain; ours is placed at the same address. */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** Base Sepolia's USDC: on chain id 84532 TestUSDC goes here, so real payloads verify offline. */
export const BASE_SEPOLIA_USDC_ADDRESS: Address = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/** Where TestUSDC goes on any other chain id. */
export const DEFAULT_USDC_ADDRESS: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

export const BASE_SEPOLIA_CHAIN_ID = 84532;

// Uniswap's Permit2 and the x402 exact proxy live at the canonical addresses the facilitator
// and the x402 client use; ours go there.
export { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS };

/** The x402 upto Permit2 proxy's canonical address. */
export const UPTO_PERMIT2_PROXY_ADDRESS: Address = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";

/** The x402 `batch-settlement` contract's canonical address (payment channels). */
export const BATCH_SETTLEMENT_ADDRESS: Address = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";

/** Its deposit collector for EIP-3009 `receiveWithAuthorization` deposits. */
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: Address =
  "0x4020806089470a89826cB9fB1f4059150b550004";

/** Its deposit collector for Permit2 witness-transfer deposits. */
export const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS: Address =
  "0x4020425FAf3B746C082C2f942b4E5159887B0005";

/** TestPermitToken (EIP-2612, no EIP-3009), on every chain id. */
export const PERMIT_TOKEN_ADDRESS: Address = "0x2612000000000000000000000000000000002612";

/** TestPlainToken (neither EIP-2612 nor EIP-3009), on every chain id. */
export const PLAIN_TOKEN_ADDRESS: Address = "0x2020000000000000000000000000000000000020";

/** TestSmartWalletFactory (CREATE2 wallets for ERC-6492 signatures), on every chain id. */
export const WALLET_FACTORY_ADDRESS: Address = "0x6492000000000000000000000000000000006492";

/** Units of each test token minted to each payer: 1,000,000 tokens (6 decimals). */
export const PAYER_USDC_BALANCE = 1_000_000n * 10n ** 6n;

export interface DevnetToken {
  address: Address;
  name: "USDC";
  version: "2";
  decimals: 6;
}

/** TestPermitToken: EIP-2612 permit with this EIP-712 domain name and version; no EIP-3009. */
export interface DevnetPermitToken {
  address: Address;
  name: "Permit Token";
  version: "1";
  decimals: 6;
}

/** TestPlainToken: a bare ERC-20 (no EIP-712 domain at all). */
export interface DevnetPlainToken {
  address: Address;
  name: "Plain Token";
  decimals: 6;
}

/** Where the x402 `batch-settlement` contracts are. */
export interface DevnetBatchSettlement {
  settlement: Address;
  erc3009Collector: Address;
  permit2Collector: Address;
}

export interface DevnetInfo {
  rpcUrl: string;
  chainId: number;
  /** CAIP-2 network id, as x402 v2 uses. */
  network: `eip155:${number}`;
  /** The x402 v1 network name, when the chain id has one ("base-sepolia" for 84532). */
  v1Network?: string;
  /** TestUSDC: EIP-3009 and EIP-2612. */
  token: DevnetToken;
  /** TestPermitToken: EIP-2612 only. */
  permitToken: DevnetPermitToken;
  /** TestPlainToken: neither. */
  plainToken: DevnetPlainToken;
  multicall3: Address;
  /** Permit2 (its signature-transfer part); payers have NOT approved it on any token. */
  permit2: Address;
  exactPermit2Proxy: Address;
  uptoPermit2Proxy: Address;
  /** The x402 batch-settlement contract and its two deposit collectors, at their canonical addresses. */
  batchSettlement: DevnetBatchSettlement;
  /** TestSmartWalletFactory, for counterfactual (ERC-6492) wallets. */
  walletFactory: Address;
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

// Set-up transactions come from the funder account (or a payer, for its own approvals); one
// queue per node and sender keeps their nonces in order even when callers run set-up steps
// concurrently.
const senderQueues = new Map<string, Promise<unknown>>();

function inSenderQueue<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = senderQueues.get(key) ?? Promise.resolve();
  const next = previous.then(task, task);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  senderQueues.set(key, settled);
  void settled.then(() => {
    if (senderQueues.get(key) === settled) senderQueues.delete(key);
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
 * Sends the calls from `sender` (default: the funder account) with consecutive nonces, gets them
 * mined and waits for every receipt; throws if any of them reverted.
 *
 * anvil_getAutomine cannot tell: it answers false under --mixed-mining as under --no-mining.
 * So with mining "manual" we mine a block at once; with "auto" we wait (automine, or the
 * heartbeat block at the latest); with an unknown mode we mine a block if nothing came in 1 s.
 */
async function sendFromFunder(
  clients: Clients,
  calls: readonly SetupCall[],
  mining: MiningMode,
  sender?: LocalAccount,
): Promise<void> {
  const { rpcUrl, publicClient, testClient, funder, chain } = clients;
  const account = sender ?? funder.account;
  if (!account) throw new Error("funder wallet has no account");
  await inSenderQueue(`${rpcUrl} ${account.address}`, async () => {
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

/** A `mint(to, amount)` call on any devnet test token (they share the signature). */
export function mintCall(token: Address, to: Address, amount: bigint): SetupCall {
  return {
    to: token,
    data: encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [to, amount] }),
  };
}

/**
 * Runs set-up transactions from the devnet's funder account, or from `sender` (a dev account
 * acting for itself, e.g. approving Permit2).
 */
export async function runSetupCalls(
  rpcUrl: string,
  chainId: number,
  calls: readonly SetupCall[],
  mining?: MiningMode,
  sender?: DevAccount,
): Promise<void> {
  const account = sender ? privateKeyToAccount(sender.privateKey) : undefined;
  await sendFromFunder(clientsFor(rpcUrl, chainId), calls, mining, account);
}

/** One Multicall3.aggregate3 call running all `calls` (none may fail): one transaction. */
export function batchedCall(calls: readonly SetupCall[]): SetupCall {
  return {
    to: MULTICALL3_ADDRESS,
    data: encodeFunctionData({
      abi: multicall3Abi,
      functionName: "aggregate3",
      args: [calls.map((c) => ({ target: c.to, allowFailure: false, callData: c.data }))],
    }),
  };
}

export interface PrepareDevnetOptions {
  /** How the node mines, if known (startDevnet passes it); see sendFromFunder. */
  mining?: "auto" | "manual";
  /**
   * Places runtime code at an address: anvil_setCode by default. A node without it passes its
   * own (ganache: evm_setAccountCode).
   */
  setCode?: (address: Address, bytecode: Hex) => Promise<unknown>;
}

/**
 * Places the devnet's contracts on the anvil node at `rpcUrl` (TestUSDC, Multicall3, Permit2, the
 * x402 exact and upto Permit2 proxies, the x402 batch-settlement contract and its deposit
 * collectors, TestPermitToken, TestPlainToken, TestSmartWalletFactory)
 * and mints 1,000,000 of each token to each payer. Payers do not approve Permit2. The node must
 * hold the default dev accounts, and be anvil (anvil_setCode) unless `options.setCode` is given.
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
  const code: ReadonlyArray<readonly [Address, Hex]> = [
    [tokenAddress, testUsdcRuntimeBytecode],
    [MULTICALL3_ADDRESS, multicall3RuntimeBytecode],
    [PERMIT2_ADDRESS, permit2RuntimeBytecode],
    [EXACT_PERMIT2_PROXY_ADDRESS, x402ExactPermit2ProxyRuntimeBytecode],
    [UPTO_PERMIT2_PROXY_ADDRESS, x402UptoPermit2ProxyRuntimeBytecode],
    [BATCH_SETTLEMENT_ADDRESS, x402BatchSettlementRuntimeBytecode],
    [ERC3009_DEPOSIT_COLLECTOR_ADDRESS, erc3009DepositCollectorRuntimeBytecode],
    [PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, permit2DepositCollectorRuntimeBytecode],
    [PERMIT_TOKEN_ADDRESS, testPermitTokenRuntimeBytecode],
    [PLAIN_TOKEN_ADDRESS, testPlainTokenRuntimeBytecode],
    [WALLET_FACTORY_ADDRESS, testSmartWalletFactoryRuntimeBytecode],
  ];
  const setCode =
    options.setCode ??
    ((address: Address, bytecode: Hex) => clients.testClient.setCode({ address, bytecode }));
  await Promise.all(code.map(([address, bytecode]) => setCode(address, bytecode)));
  // Every mint in one transaction, through Multicall3 (mint is open to anyone).
  const mints = [tokenAddress, PERMIT_TOKEN_ADDRESS, PLAIN_TOKEN_ADDRESS].flatMap((token) =>
    payerAccounts.map((payer) => mintCall(token, payer.address, PAYER_USDC_BALANCE)),
  );
  await sendFromFunder(clients, [batchedCall(mints)], options.mining);
  return {
    rpcUrl,
    chainId,
    network: `eip155:${chainId}`,
    ...(chainId === BASE_SEPOLIA_CHAIN_ID ? { v1Network: "base-sepolia" } : {}),
    token: { address: getAddress(tokenAddress), name: "USDC", version: "2", decimals: 6 },
    permitToken: { address: PERMIT_TOKEN_ADDRESS, name: "Permit Token", version: "1", decimals: 6 },
    plainToken: { address: PLAIN_TOKEN_ADDRESS, name: "Plain Token", decimals: 6 },
    multicall3: MULTICALL3_ADDRESS,
    permit2: PERMIT2_ADDRESS,
    exactPermit2Proxy: EXACT_PERMIT2_PROXY_ADDRESS,
    uptoPermit2Proxy: UPTO_PERMIT2_PROXY_ADDRESS,
    batchSettlement: {
      settlement: BATCH_SETTLEMENT_ADDRESS,
      erc3009Collector: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      permit2Collector: PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
    },
    walletFactory: WALLET_FACTORY_ADDRESS,
    facilitator: facilitatorAccount,
    payers: [...payerAccounts],
    payee: payeeAccount,
  };
}
