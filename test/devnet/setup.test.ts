import { ExactEvmScheme } from "@x402/evm/exact/client";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  erc20Abi,
  type Hex,
  http,
  parseEventLogs,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it } from "vitest";
import {
  erc3009DepositCollectorRuntimeBytecode,
  multicall3RuntimeBytecode,
  permit2DepositCollectorRuntimeBytecode,
  permit2RuntimeBytecode,
  testErc1271WalletAbi,
  testPermitTokenRuntimeBytecode,
  testPlainTokenRuntimeBytecode,
  testSmartWalletFactoryRuntimeBytecode,
  testUsdcAbi,
  testUsdcRuntimeBytecode,
  x402BatchSettlementRuntimeBytecode,
  x402ExactPermit2ProxyRuntimeBytecode,
  x402UptoPermit2ProxyRuntimeBytecode,
} from "../../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type Devnet,
  deployErc1271Wallet,
  devnetChain,
  permit2Allowance,
  prepareDevnet,
  startAnvil,
  startDevnet,
} from "../../src/evm/devnet/index.js";

const started: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((d) => d.stop()));
});

async function devnetWith(options?: Parameters<typeof startDevnet>[0]): Promise<Devnet> {
  const devnet = await startDevnet(options);
  started.push(devnet);
  return devnet;
}

function publicClientFor(devnet: Devnet) {
  return createPublicClient({
    chain: devnetChain(devnet.rpcUrl, devnet.chainId),
    transport: http(devnet.rpcUrl, { retryCount: 0 }),
    pollingInterval: 50,
    cacheTime: 0,
  });
}

function usdcBalance(devnet: Devnet, address: Address): Promise<bigint> {
  return publicClientFor(devnet).readContract({
    address: devnet.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });
}

const MILLION_USDC = 1_000_000n * 10n ** 6n;

describe("startDevnet", () => {
  it("places TestUSDC and Multicall3 and funds every payer with 1,000,000 USDC", async () => {
    const devnet = await devnetWith();
    const client = publicClientFor(devnet);
    expect(devnet.chainId).toBe(31337);
    expect(devnet.network).toBe("eip155:31337");
    expect(devnet.v1Network).toBeUndefined();
    expect(devnet.token).toEqual({
      address: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      name: "USDC",
      version: "2",
      decimals: 6,
    });
    expect(devnet.multicall3).toBe("0xcA11bde05977b3631167028862bE2a173976CA11");
    expect(await client.getCode({ address: devnet.token.address })).toBe(testUsdcRuntimeBytecode);
    expect(await client.getCode({ address: devnet.multicall3 })).toBe(multicall3RuntimeBytecode);

    expect(devnet.payers).toHaveLength(5);
    for (const payer of devnet.payers) {
      expect(await usdcBalance(devnet, payer.address)).toBe(MILLION_USDC);
    }
    expect(
      await client.readContract({
        address: devnet.token.address,
        abi: erc20Abi,
        functionName: "totalSupply",
      }),
    ).toBe(5n * MILLION_USDC);
    expect(await usdcBalance(devnet, devnet.payee.address)).toBe(0n);
  });

  it("places Permit2, the x402 proxies and batch-settlement contracts, the permit and plain tokens and the wallet factory; funds payers with each token; approves nothing", async () => {
    const devnet = await devnetWith();
    const client = publicClientFor(devnet);
    expect(devnet).toMatchObject({
      permit2: "0x000000000022D473030F116dDEE9F6B43aC78BA3",
      exactPermit2Proxy: "0x402085c248EeA27D92E8b30b2C58ed07f9E20001",
      uptoPermit2Proxy: "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002",
      permitToken: {
        address: "0x2612000000000000000000000000000000002612",
        name: "Permit Token",
        version: "1",
        decimals: 6,
      },
      plainToken: {
        address: "0x2020000000000000000000000000000000000020",
        name: "Plain Token",
        decimals: 6,
      },
      walletFactory: "0x6492000000000000000000000000000000006492",
      batchSettlement: {
        settlement: "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003",
        erc3009Collector: "0x4020806089470a89826cB9fB1f4059150b550004",
        permit2Collector: "0x4020425FAf3B746C082C2f942b4E5159887B0005",
      },
    });
    const placed: [string, string][] = [
      [devnet.permit2, permit2RuntimeBytecode],
      [devnet.exactPermit2Proxy, x402ExactPermit2ProxyRuntimeBytecode],
      [devnet.uptoPermit2Proxy, x402UptoPermit2ProxyRuntimeBytecode],
      [devnet.permitToken.address, testPermitTokenRuntimeBytecode],
      [devnet.plainToken.address, testPlainTokenRuntimeBytecode],
      [devnet.walletFactory, testSmartWalletFactoryRuntimeBytecode],
      [devnet.batchSettlement.settlement, x402BatchSettlementRuntimeBytecode],
      [devnet.batchSettlement.erc3009Collector, erc3009DepositCollectorRuntimeBytecode],
      [devnet.batchSettlement.permit2Collector, permit2DepositCollectorRuntimeBytecode],
    ];
    for (const [address, code] of placed) {
      expect(await client.getCode({ address: address as Address })).toBe(code);
    }
    for (const token of [devnet.token, devnet.permitToken, devnet.plainToken]) {
      for (const payer of devnet.payers) {
        const balance = await client.readContract({
          address: token.address,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [payer.address],
        });
        expect(balance).toBe(MILLION_USDC);
        expect(await permit2Allowance(devnet, payer.address, token.address)).toBe(0n);
      }
    }
  });

  it("leaves the facilitator's, payers' and payee's nonces at 0 and gives them ETH", async () => {
    const devnet = await devnetWith();
    const client = publicClientFor(devnet);
    for (const account of [devnet.facilitator, devnet.payee, ...devnet.payers]) {
      expect(await client.getTransactionCount({ address: account.address })).toBe(0);
      expect(await client.getBalance({ address: account.address })).toBeGreaterThan(0n);
    }
  });

  it("on chain 84532 uses Base Sepolia's USDC address, so x402 client payloads settle", async () => {
    const devnet = await devnetWith({ chainId: 84532 });
    expect(devnet.network).toBe("eip155:84532");
    expect(devnet.v1Network).toBe("base-sepolia");
    expect(devnet.token.address).toBe("0x036CbD53842c5426634e7929541eC2318f3dCF7e");

    const [payerKey] = devnet.payers;
    if (!payerKey) throw new Error("no payer");
    const payer = privateKeyToAccount(payerKey.privateKey);
    // A payment payload built by the official x402 client, exactly as for Base Sepolia.
    const { payload } = await new ExactEvmScheme(payer).createPaymentPayload(2, {
      scheme: "exact",
      network: "eip155:84532",
      asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      amount: "10000",
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2" },
    });
    const { authorization, signature } = payload as {
      authorization: Record<"from" | "to" | "value" | "validAfter" | "validBefore", string> & {
        nonce: Hex;
      };
      signature: Hex;
    };

    const client = publicClientFor(devnet);
    const facilitator = privateKeyToAccount(devnet.facilitator.privateKey);
    const { request } = await client.simulateContract({
      account: facilitator,
      address: devnet.token.address,
      abi: testUsdcAbi,
      functionName: "transferWithAuthorization",
      args: [
        authorization.from as Address,
        authorization.to as Address,
        BigInt(authorization.value),
        BigInt(authorization.validAfter),
        BigInt(authorization.validBefore),
        authorization.nonce,
        signature,
      ],
    });
    const hash = await createWalletClient({
      chain: devnetChain(devnet.rpcUrl, devnet.chainId),
      account: facilitator,
      transport: http(devnet.rpcUrl),
    }).writeContract(request);
    const receipt = await client.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    const transfers = parseEventLogs({
      abi: testUsdcAbi,
      logs: receipt.logs,
      eventName: "Transfer",
    });
    expect(transfers.map((t) => t.args)).toEqual([
      { from: payer.address, to: devnet.payee.address, value: 10_000n },
    ]);
    expect(await usdcBalance(devnet, devnet.payee.address)).toBe(10_000n);
  });

  it("works with manual mining (it mines its own set-up transactions)", async () => {
    const devnet = await devnetWith({ mining: "manual" });
    const [payer] = devnet.payers;
    if (!payer) throw new Error("no payer");
    expect(await usdcBalance(devnet, payer.address)).toBe(MILLION_USDC);
    const wallet = await deployErc1271Wallet(devnet, payer.address);
    expect(await usdcBalance(devnet, wallet)).toBe(MILLION_USDC);
    await approvePermit2(devnet, payer, devnet.permitToken.address, 123n);
    expect(await permit2Allowance(devnet, payer.address, devnet.permitToken.address)).toBe(123n);
  });

  it("stop() stops its anvil", async () => {
    const devnet = await startDevnet();
    await devnet.stop();
    expect(() => process.kill(devnet.anvil.pid, 0)).toThrow();
    await devnet.stop();
  });
});

describe("prepareDevnet", () => {
  it("prepares a node whose mining mode it is not told (mining a block when needed)", async () => {
    const anvil = await startAnvil({ mining: "manual" });
    started.push(anvil);
    const info = await prepareDevnet(anvil.rpcUrl, anvil.chainId);
    const [payer] = info.payers;
    if (!payer) throw new Error("no payer");
    const client = createPublicClient({ transport: http(anvil.rpcUrl, { retryCount: 0 }) });
    expect(
      await client.readContract({
        address: info.token.address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [payer.address],
      }),
    ).toBe(MILLION_USDC);
  });

  it("refuses a node whose chain id is not the one given", async () => {
    const anvil = await startAnvil({ chainId: 31337 });
    started.push(anvil);
    await expect(prepareDevnet(anvil.rpcUrl, 84532)).rejects.toThrow(
      /has chain id 31337, expected 84532/,
    );
  });
});

describe("deployErc1271Wallet", () => {
  it("places independent wallets even when called concurrently", async () => {
    const devnet = await devnetWith();
    const owners = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()].map(
      (key) => privateKeyToAccount(key).address,
    );
    const wallets = await Promise.all(owners.map((owner) => deployErc1271Wallet(devnet, owner)));
    expect(new Set(wallets).size).toBe(3);
    const client = publicClientFor(devnet);
    for (const [i, wallet] of wallets.entries()) {
      expect(
        await client.readContract({
          address: wallet,
          abi: testErc1271WalletAbi,
          functionName: "owner",
        }),
      ).toBe(owners[i]);
      expect(await usdcBalance(devnet, wallet)).toBe(MILLION_USDC);
    }
    // The owner is set once and for all.
    await expect(
      client.simulateContract({
        address: wallets[0] ?? "0x",
        abi: testErc1271WalletAbi,
        functionName: "setOwner",
        args: [devnet.payee.address],
        account: devnet.payee.address,
      }),
    ).rejects.toThrow(/TestERC1271Wallet: owner already set/);
  });
});
