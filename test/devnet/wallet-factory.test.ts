/**
 * TestSmartWalletFactory: CREATE2 wallets known before they exist, ERC-6492 signatures for them
 * (checked by viem, which understands ERC-6492, and by the reference facilitator with our factory
 * allow-listed), and paying from them once deployed.
 */
import { x402Client } from "@x402/core/client";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import {
  type Address,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  hashMessage,
  parseEventLogs,
  type TypedDataDefinition,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  testSmartWalletAbi,
  testSmartWalletFactoryAbi,
  testUsdcAbi,
} from "../../src/evm/devnet/artifacts.js";
import {
  type CounterfactualWallet,
  counterfactualWallet,
  type DevAccount,
  type Devnet,
  deployCounterfactualWallet,
  erc6492Signature,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import { clientsOf, send } from "../helpers/permit2.js";
import { referenceFacilitator, requirementsV2 } from "../helpers/x402.js";

let devnet: Devnet;

beforeAll(async () => {
  devnet = await startDevnet();
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

/** Test USDC minted to a (possibly not yet deployed) wallet address; mint is open to anyone. */
async function fund(address: Address, amount = 1_000_000n) {
  await send(devnet, devnet.payee, {
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "mint",
    args: [address, amount],
  });
}

function usdcBalance(address: Address) {
  return clientsOf(devnet).publicClient.readContract({
    address: devnet.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });
}

/** An EIP-3009 transfer from `wallet` to the payee, as typed data its owner signs. */
function transferTypedData(wallet: Address, value: bigint, nonce: Hex) {
  return {
    domain: {
      name: "USDC",
      version: "2",
      chainId: devnet.chainId,
      verifyingContract: devnet.token.address,
    },
    types: {
      TransferWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "TransferWithAuthorization",
    message: {
      from: wallet,
      to: devnet.payee.address,
      value,
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 600),
      nonce,
    },
  } as const;
}

describe("TestSmartWalletFactory", () => {
  it("deploys the wallet at the predicted address, once; a repeated createAccount returns it", async () => {
    const owner = payer(0);
    const wallet = counterfactualWallet(devnet, owner.address, 42n);
    const { publicClient } = clientsOf(devnet);
    expect(
      await publicClient.readContract({
        address: devnet.walletFactory,
        abi: testSmartWalletFactoryAbi,
        functionName: "predictAddress",
        args: [owner.address, 42n],
      }),
    ).toBe(wallet.address);
    expect(await publicClient.getCode({ address: wallet.address })).toBeUndefined();
    // Another salt, another owner: other addresses.
    expect(counterfactualWallet(devnet, owner.address, 43n).address).not.toBe(wallet.address);
    expect(counterfactualWallet(devnet, payer(1).address, 42n).address).not.toBe(wallet.address);

    await deployCounterfactualWallet(devnet, wallet);
    expect(await publicClient.getCode({ address: wallet.address })).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(
      await publicClient.readContract({
        address: wallet.address,
        abi: testSmartWalletAbi,
        functionName: "owner",
      }),
    ).toBe(owner.address);

    const again = await send(devnet, devnet.payee, {
      address: devnet.walletFactory,
      abi: testSmartWalletFactoryAbi,
      functionName: "createAccount",
      args: [owner.address, 42n],
    });
    expect(again.status).toBe("success");
    expect(parseEventLogs({ abi: testSmartWalletFactoryAbi, logs: again.logs })).toEqual([]);
  });

  it("an ERC-6492 signature of an undeployed wallet verifies with viem (typed data and hash)", async () => {
    const owner = privateKeyToAccount(payer(1).privateKey);
    const wallet = counterfactualWallet(devnet, owner.address, 1n);
    const { publicClient } = clientsOf(devnet);
    const typedData = transferTypedData(wallet.address, 10_000n, `0x${"11".repeat(32)}`);
    const wrapped = erc6492Signature(wallet, await owner.signTypedData(typedData));
    expect(
      await publicClient.verifyTypedData({
        ...typedData,
        address: wallet.address,
        signature: wrapped,
      }),
    ).toBe(true);
    const stranger = privateKeyToAccount(payer(2).privateKey);
    const forged = erc6492Signature(wallet, await stranger.signTypedData(typedData));
    expect(
      await publicClient.verifyTypedData({
        ...typedData,
        address: wallet.address,
        signature: forged,
      }),
    ).toBe(false);

    const hash = hashMessage("hello");
    const signed = erc6492Signature(wallet, await owner.sign({ hash }));
    expect(
      await publicClient.verifyHash({ address: wallet.address, hash, signature: signed }),
    ).toBe(true);
    // Verifying ran the deployment only inside eth_call: the wallet is still not there.
    expect(await publicClient.getCode({ address: wallet.address })).toBeUndefined();
  });

  it("once deployed through the factory, the wallet pays: EIP-3009 and, via execute, an approval", async () => {
    const owner = privateKeyToAccount(payer(2).privateKey);
    const wallet = counterfactualWallet(devnet, owner.address, 7n);
    await fund(wallet.address);
    const typedData = transferTypedData(wallet.address, 250_000n, `0x${"22".repeat(32)}`);
    const inner = await owner.signTypedData(typedData);
    await deployCounterfactualWallet(devnet, wallet);

    const before = await usdcBalance(devnet.payee.address);
    const { message } = typedData;
    await send(devnet, devnet.facilitator, {
      address: devnet.token.address,
      abi: testUsdcAbi,
      functionName: "transferWithAuthorization",
      args: [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
        inner,
      ],
    });
    expect(await usdcBalance(devnet.payee.address)).toBe(before + 250_000n);
    expect(await usdcBalance(wallet.address)).toBe(750_000n);

    // Only the owner may make the wallet act (here: approve Permit2).
    const approve = {
      address: wallet.address,
      abi: testSmartWalletAbi,
      functionName: "execute",
    } as const;
    const approveData = encodeFunctionData({
      abi: erc20Abi,
      functionName: "approve",
      args: [devnet.permit2, 1n],
    });
    await send(devnet, payer(2), { ...approve, args: [devnet.token.address, 0n, approveData] });
    expect(
      await clientsOf(devnet).publicClient.readContract({
        address: devnet.token.address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [wallet.address, devnet.permit2],
      }),
    ).toBe(1n);
    await expect(
      send(devnet, payer(3), { ...approve, args: [devnet.token.address, 0n, approveData] }),
    ).rejects.toThrow(/NotOwner/);
  });
});

describe("the reference facilitator and a counterfactual wallet (EIP-3009, ERC-6492)", () => {
  /** The official client, signing as the wallet: its owner's key, wrapped in ERC-6492. */
  async function walletPayload(wallet: CounterfactualWallet, owner: DevAccount) {
    const key = privateKeyToAccount(owner.privateKey);
    const signer = {
      address: wallet.address,
      signTypedData: async (typedData: TypedDataDefinition) =>
        erc6492Signature(wallet, await key.signTypedData(typedData as never)),
    };
    const client = x402Client.fromConfig({ schemes: [], spendControls: false });
    client.register(devnet.network, new ExactEvmClient(signer as never));
    // biome-ignore lint/suspicious/noExplicitAny: the reference's types are version unions.
    const requirements = requirementsV2(devnet) as any;
    const payload = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: "http://localhost/paid" },
      accepts: [requirements],
    });
    return { payload, requirements };
  }

  it("with our factory allow-listed: verified, then settled (the wallet deployed, the money moved)", async () => {
    const owner = payer(3);
    const wallet = counterfactualWallet(devnet, owner.address, 99n);
    await fund(wallet.address);
    const { payload, requirements } = await walletPayload(wallet, owner);
    const reference = referenceFacilitator(devnet, devnet.facilitator, {
      eip6492AllowedFactories: [devnet.walletFactory],
    });
    expect(await reference.verify(payload, requirements)).toMatchObject({
      isValid: true,
      payer: wallet.address,
    });
    const before = await usdcBalance(devnet.payee.address);
    expect(await reference.settle(payload, requirements)).toMatchObject({
      success: true,
      payer: wallet.address,
    });
    expect(await clientsOf(devnet).publicClient.getCode({ address: wallet.address })).toMatch(
      /^0x[0-9a-f]+$/,
    );
    expect(await usdcBalance(devnet.payee.address)).toBe(before + 10_000n);
  });

  it("without the allow-listing: refused (eip6492_factory_not_allowed)", async () => {
    const owner = payer(4);
    const wallet = counterfactualWallet(devnet, owner.address, 5n);
    await fund(wallet.address);
    const { payload, requirements } = await walletPayload(wallet, owner);
    const verdict = await referenceFacilitator(devnet, devnet.facilitator).verify(
      payload,
      requirements,
    );
    expect(verdict).toMatchObject({ isValid: false, invalidReason: "eip6492_factory_not_allowed" });
  });
});
