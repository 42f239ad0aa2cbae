/**
 * The local devnet: an anvil node with TestUSDC and Multicall3 in place and funded payers.
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
export type { DevnetInfo, DevnetToken, PrepareDevnetOptions } from "./setup.js";
export {
  BASE_SEPOLIA_USDC_ADDRESS,
  DEFAULT_USDC_ADDRESS,
  devnetChain,
  MULTICALL3_ADDRESS,
  PAYER_USDC_BALANCE,
  prepareDevnet,
  usdcAddressFor,
} from "./setup.js";

export type DevnetOptions = AnvilOptions;

export type Devnet = DevnetInfo & {
  anvil: AnvilInstance;
  /** Stops the anvil node. Safe to call more than once. */
  stop(): Promise<void>;
};

/** Starts anvil and prepares it (TestUSDC, Multicall3, funded payers). */
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
