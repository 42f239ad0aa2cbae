/** Puts the devnet's contracts on a running anvil (anvil_setCode, no deployment) and funds the payers. */
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
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  ERC3009_COLLECTOR_ADDRESS,
  PERMIT2_COLLECTOR_ADDRESS,
  SETTLEMENT_ADDRESS,
} from "../batch-settlement/constants.js";
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from "../exact/permit2-encoding.js";
import { UPTO_PERMIT2_PROXY_ADDRESS } from "../upto/encoding.js";
import {
  type DevAccount,
  facilitatorAccount,
  funderAccount,
  payeeAccount,
  payerAccounts,
} from "./accounts.js";
import * as artifacts from "./artifacts.js";

/** Where the canonical Multicall3 lives on every chain; ours is placed at the same address. */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";
/** Where TestUSDC goes on any chain id but Base Sepolia's. */
export const DEFAULT_USDC_ADDRESS: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const BASE_SEPOLIA_CHAIN_ID = 84532;
// Our test token, at the same address on every chain id.
export const PLAIN_TOKEN_ADDRESS: Address = "0x2020000000000000000000000000000000000020";
// The x402 contracts go to the canonical addresses the facilitator and the x402 client use.

/** Units of each test token minted to each payer: 1,000,000 tokens (6 decimals). */
export const PAYER_USDC_BALANCE = 1_000_000n * 10n ** 6n;

/** What a devnet holds, and where. */
export type DevnetInfo = ReturnType<typeof devnetInfo>;

/** A devnet, and how its anvil mines when this process started it. */
export type DevnetLike = DevnetInfo & { anvil?: { mining: "auto" | "manual" } };

/** Where TestUSDC is placed for a chain id. */
export function usdcAddressFor(chainId: number): Address {
  // Base Sepolia's USDC: real payloads verify offline.
  return chainId === BASE_SEPOLIA_CHAIN_ID
    ? "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
    : DEFAULT_USDC_ADDRESS;
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

/** Where a devnet answers. */
export type DevnetNode = Pick<DevnetInfo, "rpcUrl" | "chainId">;

// A local node answers at once: poll every 50 ms instead of viem's default 4 s.
const clientOptions = ({ rpcUrl, chainId }: DevnetNode) => ({
  chain: devnetChain(rpcUrl, chainId),
  transport: http(rpcUrl, { retryCount: 0 }),
  pollingInterval: 50,
});

/** A viem client reading the devnet. */
export const devnetReader = (node: DevnetNode) => createPublicClient(clientOptions(node));

/** anvil's test methods (anvil_setCode, evm_mine) on the devnet. */
export const devnetTestClient = (node: DevnetNode) =>
  createTestClient({ ...clientOptions(node), mode: "anvil" });

// One queue per node and sender keeps set-up nonces in order when set-up steps run concurrently.
const senderQueues = new Map<string, Promise<unknown>>();

function inSenderQueue<T>(key: string, task: () => Promise<T>): Promise<T> {
  const next = (senderQueues.get(key) ?? Promise.resolve()).then(task, task);
  senderQueues.set(key, next);
  return next;
}

export interface SetupCall {
  to: Address;
  data: Hex;
}

/** A `mint(to, amount)` call on any devnet test token (they share the signature). */
export function mintCall(token: Address, to: Address, amount: bigint): SetupCall {
  return {
    to: token,
    data: encodeFunctionData({
      abi: artifacts.testUsdcAbi,
      functionName: "mint",
      args: [to, amount],
    }),
  };
}

/** Sends the calls with consecutive nonces, awaits every receipt (throws on a revert). Since
 * anvil_getAutomine can't tell the modes apart, an unknown one mines a block after 1 s unheard. */
export async function runSetupCalls(
  rpcUrl: string,
  chainId: number,
  calls: readonly SetupCall[],
  mining?: "auto" | "manual",
  sender: DevAccount = funderAccount,
): Promise<void> {
  const node = { rpcUrl, chainId };
  const [publicClient, testClient] = [devnetReader(node), devnetTestClient(node)];
  const account = privateKeyToAccount(sender.privateKey);
  const wallet = createWalletClient({ ...clientOptions(node), account });
  await inSenderQueue(`${rpcUrl} ${account.address}`, async () => {
    const nonce = await publicClient.getTransactionCount({
      address: account.address,
      blockTag: "pending",
    });
    const hashes: Hash[] = [];
    for (const [i, { to, data }] of calls.entries()) {
      hashes.push(await wallet.sendTransaction({ to, data, nonce: nonce + i }));
    }
    if (mining === "manual") await testClient.mine({ blocks: 1 });
    const fallback =
      mining === undefined
        ? setTimeout(() => testClient.mine({ blocks: 1 }).catch(() => undefined), 1_000)
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

/** runSetupCalls on `devnet`, as its anvil mines. */
export const runDevnetCalls = (devnet: DevnetLike, calls: SetupCall[], sender?: DevAccount) =>
  runSetupCalls(devnet.rpcUrl, devnet.chainId, calls, devnet.anvil?.mining, sender);

/** One Multicall3.aggregate3 call running all `calls` (none may fail): one transaction. */
export function batchedCall(calls: readonly SetupCall[]): SetupCall {
  return {
    to: MULTICALL3_ADDRESS,
    data: encodeFunctionData({
      abi: artifacts.multicall3Abi,
      functionName: "aggregate3",
      args: [calls.map((c) => ({ target: c.to, allowFailure: false, callData: c.data }))],
    }),
  };
}

export interface PrepareDevnetOptions {
  /** How the node mines, if known (startDevnet passes it); see runSetupCalls. */
  mining?: "auto" | "manual";
  /** Places runtime code at an address: anvil_setCode unless given (ganache: evm_setAccountCode). */
  setCode?: (address: Address, bytecode: Hex) => Promise<unknown>;
}

/** Places the contracts on the node (its dev accounts funded) and mints each payer each token. */
export async function prepareDevnet(
  rpcUrl: string,
  chainId: number,
  options: PrepareDevnetOptions = {},
): Promise<DevnetInfo> {
  const node = { rpcUrl, chainId };
  const actualChainId = await devnetReader(node).getChainId();
  if (actualChainId !== chainId) {
    throw new Error(`prepareDevnet: ${rpcUrl} has chain id ${actualChainId}, expected ${chainId}`);
  }
  const info = devnetInfo(rpcUrl, chainId);
  const code: ReadonlyArray<readonly [Address, Hex]> = [
    [info.token.address, artifacts.testUsdcRuntimeBytecode],
    [info.multicall3, artifacts.multicall3RuntimeBytecode],
    [info.permit2, artifacts.permit2RuntimeBytecode],
    [info.exactPermit2Proxy, artifacts.x402ExactPermit2ProxyRuntimeBytecode],
    [info.uptoPermit2Proxy, artifacts.x402UptoPermit2ProxyRuntimeBytecode],
    [info.batchSettlement.settlement, artifacts.x402BatchSettlementRuntimeBytecode],
    [info.batchSettlement.erc3009Collector, artifacts.erc3009DepositCollectorRuntimeBytecode],
    [info.batchSettlement.permit2Collector, artifacts.permit2DepositCollectorRuntimeBytecode],
    [info.permitToken.address, artifacts.testPermitTokenRuntimeBytecode],
    [info.plainToken.address, artifacts.testPlainTokenRuntimeBytecode],
    [info.walletFactory, artifacts.testSmartWalletFactoryRuntimeBytecode],
  ];
  const testClient = devnetTestClient(node);
  const setCode =
    options.setCode ??
    ((address: Address, bytecode: Hex) => testClient.setCode({ address, bytecode }));
  await Promise.all(code.map(([address, bytecode]) => setCode(address, bytecode)));
  // Every mint in one transaction, through Multicall3 (mint is open to anyone).
  const tokens = [info.token, info.permitToken, info.plainToken];
  const mints = tokens.flatMap(({ address }) =>
    payerAccounts.map((payer) => mintCall(address, payer.address, PAYER_USDC_BALANCE)),
  );
  await runSetupCalls(rpcUrl, chainId, [batchedCall(mints)], options.mining);
  return info;
}

function devnetInfo(rpcUrl: string, chainId: number) {
  return {
    rpcUrl,
    chainId,
    network: `eip155:${chainId}` as const,
    ...(chainId === BASE_SEPOLIA_CHAIN_ID ? { v1Network: "base-sepolia" } : {}),
    // TestUSDC: EIP-3009 and EIP-2612; TestPermitToken: EIP-2612 only; TestPlainToken: neither.
    token: {
      address: getAddress(usdcAddressFor(chainId)),
      name: "USDC",
      version: "2",
      decimals: 6,
    } as const,
    permitToken: {
      address: "0x2612000000000000000000000000000000002612" as Address,
      name: "Permit Token",
      version: "1",
      decimals: 6,
    } as const,
    plainToken: { address: PLAIN_TOKEN_ADDRESS, name: "Plain Token", decimals: 6 } as const,
    multicall3: MULTICALL3_ADDRESS,
    /** Permit2 (its signature-transfer part); payers have NOT approved it on any token. */
    permit2: PERMIT2_ADDRESS,
    exactPermit2Proxy: EXACT_PERMIT2_PROXY_ADDRESS,
    uptoPermit2Proxy: UPTO_PERMIT2_PROXY_ADDRESS,
    /** The x402 batch-settlement contract and its two deposit collectors. */
    batchSettlement: {
      settlement: SETTLEMENT_ADDRESS,
      erc3009Collector: ERC3009_COLLECTOR_ADDRESS,
      permit2Collector: PERMIT2_COLLECTOR_ADDRESS,
    },
    /** TestSmartWalletFactory, for counterfactual (ERC-6492) wallets. */
    walletFactory: "0x6492000000000000000000000000000000006492" as Address,
    facilitator: facilitatorAccount,
    payers: [...payerAccounts],
    payee: payeeAccount,
  };
}
