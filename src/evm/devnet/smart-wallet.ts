/** Counterfactual (ERC-6492) wallets of TestSmartWalletFactory, signed for before they exist. */
import {
  type Address,
  concat,
  encodeAbiParameters,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  numberToHex,
  serializeErc6492Signature,
} from "viem";
import { testSmartWalletBytecode, testSmartWalletFactoryAbi } from "./artifacts.js";
import { type DevnetInfo, type DevnetLike, runDevnetCalls } from "./setup.js";

export interface CounterfactualWallet {
  /** Where the factory deploys the wallet. */
  readonly address: Address;
  readonly owner: Address;
  readonly salt: bigint;
  /** The factory, and the call to it that deploys the wallet (ERC-6492's factory data). */
  readonly factory: Address;
  readonly factoryData: Hex;
}

/** The wallet TestSmartWalletFactory deploys for `owner` and `salt` (computed, not read). */
export function counterfactualWallet(
  devnet: DevnetInfo,
  owner: Address,
  salt: bigint = 0n,
): CounterfactualWallet {
  const address = getContractAddress({
    opcode: "CREATE2",
    from: devnet.walletFactory,
    salt: numberToHex(salt, { size: 32 }),
    bytecode: concat([
      testSmartWalletBytecode,
      encodeAbiParameters([{ type: "address" }], [owner]),
    ]),
  });
  const factoryData = encodeFunctionData({
    abi: testSmartWalletFactoryAbi,
    functionName: "createAccount",
    args: [owner, salt],
  });
  return { address, owner, salt, factory: devnet.walletFactory, factoryData };
}

/** `signature` (by the wallet's owner) wrapped in ERC-6492, for a wallet not deployed yet. */
export function erc6492Signature(wallet: CounterfactualWallet, signature: Hex): Hex {
  return serializeErc6492Signature({
    address: wallet.factory,
    data: wallet.factoryData,
    signature,
  });
}

/** Deploys the wallet through the factory (a transaction from the devnet's funder account). */
export async function deployCounterfactualWallet(
  devnet: DevnetLike,
  wallet: CounterfactualWallet,
): Promise<void> {
  await runDevnetCalls(devnet, [{ to: wallet.factory, data: wallet.factoryData }]);
}
