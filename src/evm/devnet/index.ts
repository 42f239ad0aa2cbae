/**
 * The local devnet: an anvil node with the test tokens, Multicall3, Permit2, the x402 Permit2
 * proxies and a smart-wallet factory in place, and funded payers.
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  bytesToHex,
  createTestClient,
  encodeFunctionData,
  getAddress,
  http,
} from "viem";
import { type AnvilInstance, type AnvilOptions, startAnvil } from "./anvil.js";
import { testErc1271WalletAbi, testErc1271WalletRuntimeBytecode } from "./artifacts.js";
import {
  type DevnetInfo,
  devnetChain,
  mintCall,
  PAYER_USDC_BALANCE,
  prepareDevnet,
  runSetupCalls,
} from "./setup.js";

export type { DevAccount } from "./accounts.js";
export {
  DEV_MNEMONIC,
  devAccounts,
  facilitatorAccount,
  funderAccount,
  payeeAccount,
  payerAccounts,
} from "./accounts.js";
export type { AnvilInstance, AnvilOptions } from "./anvil.js";
export { anvilBinaryPath, startAnvil } from "./anvil.js";
export { approvePermit2, permit2Allowance, permit2NonceUsed } from "./permit2.js";
export type {
  DevnetBatchSettlement,
  DevnetInfo,
  DevnetPermitToken,
  DevnetPlainToken,
  DevnetToken,
  PrepareDevnetOptions,
} from "./setup.js";
export {
  BASE_SEPOLIA_USDC_ADDRESS,
  BATCH_SETTLEMENT_ADDRESS,
  DEFAULT_USDC_ADDRESS,
  devnetChain,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  EXACT_PERMIT2_PROXY_ADDRESS,
  MULTICALL3_ADDRESS,
  PAYER_USDC_BALANCE,
  PERMIT_TOKEN_ADDRESS,
  PERMIT2_ADDRESS,
  PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
  PLAIN_TOKEN_ADDRESS,
  prepareDevnet,
  UPTO_PERMIT2_PROXY_ADDRESS,
  usdcAddressFor,
  WALLET_FACTORY_ADDRESS,
} from "./setup.js";
export type { CounterfactualWallet } from "./smart-wallet.js";
export {
  counterfactualWallet,
  deployCounterfactualWallet,
  erc6492Signature,
} from "./smart-wallet.js";

export type DevnetOptions = AnvilOptions;

export type Devnet = DevnetInfo & {
  anvil: AnvilInstance;
  /** Stops the anvil node. Safe to call more than once. */
  stop(): Promise<void>;
};

/** Starts anvil and prepares it (contracts in place, funded payers; see prepareDevnet). */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const anvil = await startAnvil(options);
  try {
    const info = await prepareDevnet(anvil.rpcUrl, anvil.chainId, { mining: anvil.mining });
    return { ...info, anvil, stop: () => anvil.stop() };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/**
 * Places a TestERC1271Wallet owned by `owner` at a fresh random address, sets its owner and
 * mints it 1,000,000 USDC. Returns the wallet's address.
 */
export async function deployErc1271Wallet(
  devnet: DevnetInfo | Devnet,
  owner: Address,
): Promise<Address> {
  const wallet = getAddress(bytesToHex(randomBytes(20)));
  const testClient = createTestClient({
    chain: devnetChain(devnet.rpcUrl, devnet.chainId),
    transport: http(devnet.rpcUrl, { retryCount: 0 }),
    mode: "anvil",
  });
  await testClient.setCode({ address: wallet, bytecode: testErc1271WalletRuntimeBytecode });
  const mining = "anvil" in devnet ? devnet.anvil.mining : undefined;
  await runSetupCalls(
    devnet.rpcUrl,
    devnet.chainId,
    [
      {
        to: wallet,
        data: encodeFunctionData({
          abi: testErc1271WalletAbi,
          functionName: "setOwner",
          args: [getAddress(owner)],
        }),
      },
      mintCall(devnet.token.address, wallet, PAYER_USDC_BALANCE),
    ],
    mining,
  );
  return wallet;
}
