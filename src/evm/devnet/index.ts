/** The local devnet: anvil with the test tokens and x402 contracts in place, and funded payers. */
import { randomBytes } from "node:crypto";
import { type Address, bytesToHex, encodeFunctionData, getAddress } from "viem";
import { type AnvilInstance, type AnvilOptions, startAnvil } from "./anvil.js";
import { testErc1271WalletAbi, testErc1271WalletRuntimeBytecode } from "./artifacts.js";
import {
  type DevnetInfo,
  type DevnetLike,
  devnetTestClient,
  mintCall,
  PAYER_USDC_BALANCE,
  prepareDevnet,
  runDevnetCalls,
} from "./setup.js";

export type { DevAccount } from "./accounts.js";
export { DEV_MNEMONIC, devAccounts, payerAccounts } from "./accounts.js";
export type { AnvilInstance } from "./anvil.js";
export { startAnvil } from "./anvil.js";
export { approvePermit2, permit2Allowance, permit2NonceUsed } from "./permit2.js";
export type { DevnetInfo } from "./setup.js";
export {
  devnetChain,
  MULTICALL3_ADDRESS,
  PAYER_USDC_BALANCE,
  PLAIN_TOKEN_ADDRESS,
  prepareDevnet,
  usdcAddressFor,
} from "./setup.js";
export type { CounterfactualWallet } from "./smart-wallet.js";
export {
  counterfactualWallet,
  deployCounterfactualWallet,
  erc6492Signature,
} from "./smart-wallet.js";

export type Devnet = DevnetInfo & {
  anvil: AnvilInstance;
  /** Stops the anvil node. Safe to call more than once. */
  stop(): Promise<void>;
};

/** Starts anvil and prepares it (contracts in place, funded payers; see prepareDevnet). */
export async function startDevnet(options: AnvilOptions = {}): Promise<Devnet> {
  const anvil = await startAnvil(options);
  try {
    const info = await prepareDevnet(anvil.rpcUrl, anvil.chainId, { mining: anvil.mining });
    return { ...info, anvil, stop: () => anvil.stop() };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/** Places a TestERC1271Wallet owned by `owner` at a fresh random address and mints it 1,000,000 USDC. */
export async function deployErc1271Wallet(devnet: DevnetLike, owner: Address): Promise<Address> {
  const wallet = getAddress(bytesToHex(randomBytes(20)));
  await devnetTestClient(devnet).setCode({
    address: wallet,
    bytecode: testErc1271WalletRuntimeBytecode,
  });
  const setOwner = encodeFunctionData({
    abi: testErc1271WalletAbi,
    functionName: "setOwner",
    args: [getAddress(owner)],
  });
  const mint = mintCall(devnet.token.address, wallet, PAYER_USDC_BALANCE);
  await runDevnetCalls(devnet, [{ to: wallet, data: setOwner }, mint]);
  return wallet;
}
