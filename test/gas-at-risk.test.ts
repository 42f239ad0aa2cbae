/**
 * No request can make us spend gas we did not agree to (issue 18): a token contract that burns
 * gas, a fee spike, and a front-runner that makes every settlement of fresh payers revert. Each is
 * tried over real HTTP against a real anvil, with payloads from the official x402 client.
 */
import {
  type Address,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  parseEther,
  parseGwei,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  testGasBurnerTokenAbi,
  testGasBurnerTokenRuntimeBytecode,
  testGasBurnerWalletAbi,
  testGasBurnerWalletRuntimeBytecode,
  testUsdcAbi,
} from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import type { FacilitatorOptions } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { createMetrics } from "../src/http/metrics.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { chainOf, payerHolding } from "./helpers/chain.js";
import { facilitatorOn, postJson } from "./helpers/facilitator.js";
import { frontRun } from "./helpers/front-run.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { randomNonce, signAuthorization, wireAuthorization } from "./helpers/sign.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const post = postJson;

const freshPayer = (): DevAccount => {
  const privateKey = generatePrivateKey();
  return { address: privateKeyToAccount(privateKey).address, privateKey } as DevAccount;
};

async function serving(devnet: Devnet, options: Partial<FacilitatorOptions> = {}) {
  const facilitator = facilitatorOn(devnet, options);
  const metrics = await createMetrics();
  metrics.attach(facilitator);
  const server = await startServer(createHandler(facilitator, { metrics }), { port: 0 });
  return { facilitator, server, metrics };
}

/** What our settlement key has sent and spent so far. */
async function ours(devnet: Devnet) {
  const rpc = chainOf(devnet);
  const address = devnet.facilitator.address;
  return {
    sent: await rpc.getTransactionCount({ address, blockTag: "pending" }),
    wei: await rpc.getBalance({ address }),
  };
}

describe("a token contract that burns our gas", () => {
  let devnet: Devnet;
  let server: RunningServer;
  beforeAll(async () => {
    devnet = await startDevnet();
    ({ server } = await serving(devnet));
  });
  afterAll(async () => {
    await server?.close();
    await devnet?.stop();
  });

  /** A new hostile token: USDC to every read, and `burn` gas per transfer with no Transfer. */
  async function burner(burn: bigint, onlyWhenPriced = false): Promise<Address> {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    await test.setCode({ address, bytecode: testGasBurnerTokenRuntimeBytecode });
    const owner = devnet.payers[0] as DevAccount;
    const wallet = createWalletClient({
      account: privateKeyToAccount(owner.privateKey),
      transport: http(devnet.rpcUrl),
    });
    const hash = await wallet.writeContract({
      address,
      abi: testGasBurnerTokenAbi,
      functionName: "configure",
      args: [burn, onlyWhenPriced],
      chain: null,
    });
    await chainOf(devnet).waitForTransactionReceipt({ hash, pollingInterval: 50 });
    return address;
  }

  async function payWith(asset: Address) {
    const requirements = requirementsV2(devnet, {
      asset,
      amount: "10000",
      extra: { name: "USDC", version: "2" },
    });
    return { payload: await clientPayload(freshPayer(), requirements), requirements };
  }

  for (const burn of [1_000_000n, 5_000_000n, 20_000_000n]) {
    test(`burning ${burn} gas: verify and settle refuse it (gas_limit_exceeded, naming the asset and the gas); nothing is sent`, async () => {
      const asset = await burner(burn);
      const before = await ours(devnet);
      const request = await payWith(asset);
      const verified = await post(server, "/verify", request);
      expect(verified.status).toBe(400);
      expect(verified.body).toMatchObject({ success: false, error: "gas_limit_exceeded" });
      expect(verified.body.message).toContain(asset);
      const settled = await post(server, "/settle", request);
      expect(settled.status).toBe(400);
      expect(settled.body).toMatchObject({ success: false, error: "gas_limit_exceeded" });
      const message = String(settled.body.message);
      expect(message).toContain(asset);
      // The gas it asked for, as the node estimated it: at least what it burns.
      const asked = BigInt((/take ([0-9,]+) gas/.exec(message)?.[1] ?? "0").replaceAll(",", ""));
      expect(asked).toBeGreaterThan(burn);
      expect(message).toMatch(/over the 120,000 this facilitator allows for an EIP-3009 transfer/);
      expect(await ours(devnet)).toEqual(before);
    });
  }

  test("a token that burns only in a priced transaction: one bounded transaction, then the asset is refused", async () => {
    const asset = await burner(1_000_000n, true);
    const before = await ours(devnet);
    const first = await payWith(asset);
    // A simulation runs at gas price 0: it sees an ordinary transfer.
    expect((await post(server, "/verify", first)).body).toMatchObject({ success: true });
    const settled = await post(server, "/settle", first);
    expect(settled.body).toMatchObject({ success: false, error: "settlement_failed" });
    const hash = settled.body.transactionHash as Hex;
    const receipt = await chainOf(devnet).getTransactionReceipt({ hash });
    expect(receipt.status).toBe("reverted");
    expect(receipt.gasUsed).toBeLessThanOrEqual(120_000n);

    for (let i = 0; i < 3; i++) {
      const again = await post(server, "/settle", await payWith(asset));
      expect(again.status).toBe(429);
      expect(again.body).toMatchObject({ success: false, error: "asset_throttled" });
      expect(String(again.body.message)).toMatch(/ran out of gas 1 time/);
      expect(Number(again.retryAfter)).toBeGreaterThan(3000);
    }
    expect((await ours(devnet)).sent).toBe(before.sent + 1);
  });

  test("contract wallets that burn gas in their signature check: each costs at most its bound, and the token stays served", async () => {
    const rpc = chainOf(devnet);
    const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    const owner = devnet.payers[0] as DevAccount;
    const wallet = createWalletClient({
      account: privateKeyToAccount(owner.privateKey),
      transport: http(devnet.rpcUrl),
    });
    const call = async (request: Parameters<typeof wallet.writeContract>[0]) =>
      rpc.waitForTransactionReceipt({
        hash: await wallet.writeContract(request),
        pollingInterval: 50,
      });
    /** A payment from `from`, signed with `key` (a burner wallet accepts any signature). */
    const payFrom = async (from: Address, key: Hex = owner.privateKey) => {
      const fields = {
        from,
        to: devnet.payee.address,
        value: 1_000n,
        validAfter: 0n,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 300),
        nonce: randomNonce(),
      };
      const signature = await signAuthorization(devnet, key, fields);
      const requirements = requirementsV2(devnet, { amount: "1000" });
      const payload = {
        x402Version: 2,
        resource: { url: "http://localhost/paid" },
        accepted: requirements,
        payload: { authorization: wireAuthorization(fields), signature },
      };
      return post(server, "/settle", { payload, requirements });
    };
    // The token has settled here before: it is known.
    const regular = await payerHolding(devnet, 1_000n);
    expect((await payFrom(regular.address, regular.privateKey)).body).toMatchObject({
      success: true,
    });
    const before = await ours(devnet);
    for (let i = 0; i < 4; i++) {
      const burner = privateKeyToAccount(generatePrivateKey()).address;
      await test.setCode({ address: burner, bytecode: testGasBurnerWalletRuntimeBytecode });
      await call({
        address: burner,
        abi: testGasBurnerWalletAbi,
        functionName: "configure",
        args: [1_000_000n],
        chain: null,
      } as never);
      await call({
        address: devnet.token.address,
        abi: testUsdcAbi,
        functionName: "mint",
        args: [burner, 1_000n],
        chain: null,
      } as never);
      const reply = await payFrom(burner);
      expect(reply.body).toMatchObject({ success: false, error: "settlement_failed" });
      const receipt = await rpc.getTransactionReceipt({ hash: reply.body.transactionHash as Hex });
      // Bounded: an EIP-3009 transfer from a contract wallet may use 420,000 gas at the most.
      expect(receipt.gasUsed).toBeLessThanOrEqual(420_000n);
    }
    expect((await ours(devnet)).sent).toBe(before.sent + 4);
    // The token is still served to an ordinary payer.
    const other = await payerHolding(devnet, 1_000n);
    const ordinary = await payFrom(other.address, other.privateKey);
    expect(ordinary.body).toMatchObject({ success: true });
  });

  test("a token that moves nothing: one cheap transaction, then the asset is refused for every payer", async () => {
    const asset = await burner(0n);
    const before = await ours(devnet);
    const settled = await post(server, "/settle", await payWith(asset));
    expect(settled.body).toMatchObject({ success: false, error: "settlement_failed" });
    expect(String(settled.body.message)).toMatch(/no matching Transfer event/);
    const again = await post(server, "/settle", await payWith(asset));
    expect(again.status).toBe(429);
    expect(again.body).toMatchObject({ success: false, error: "asset_throttled" });
    expect(String(again.body.message)).toMatch(/succeeded without moving the payment/);
    expect((await ours(devnet)).sent).toBe(before.sent + 1);
  });
});

describe("an operator's list of assets", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("only listed assets are verified and settled on that network; others are 400 asset_not_allowed, nothing sent", async () => {
    const listed = devnet.token.address;
    const other = devnet.permitToken.address;
    const { server } = await serving(devnet, { allowedAssets: { [devnet.chainId]: [listed] } });
    try {
      const before = await ours(devnet);
      const requirements = requirementsV2(devnet, { asset: other });
      const request = { payload: await clientPayload(freshPayer(), requirements), requirements };
      for (const route of ["/verify", "/settle"]) {
        const reply = await post(server, route, request);
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ success: false, error: "asset_not_allowed" });
        expect(String(reply.body.message)).toContain(`on ${devnet.network}`);
      }
      expect(await ours(devnet)).toEqual(before);
      const paying = requirementsV2(devnet, { amount: "1000" });
      const payer = await payerHolding(devnet, 1000n);
      const ok = { payload: await clientPayload(payer, paying), requirements: paying };
      expect((await post(server, "/settle", ok)).body).toMatchObject({ success: true });
    } finally {
      await server.close();
    }
  });
});

describe("a fee spike", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
    const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    await test.setNextBlockBaseFeePerGas({ baseFeePerGas: parseGwei("2000") });
    await test.mine({ blocks: 1 });
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  async function request() {
    const requirements = requirementsV2(devnet, { amount: "1000" });
    return {
      payload: await clientPayload(await payerHolding(devnet, 1000n), requirements),
      requirements,
    };
  }

  test("at 2,000 gwei the default cap refuses the settle (503, Retry-After, what it would cost and how to raise it); nothing is sent", async () => {
    const { server } = await serving(devnet);
    try {
      const before = await ours(devnet);
      const reply = await post(server, "/settle", await request());
      expect(reply.status).toBe(503);
      expect(reply.body).toMatchObject({ success: false, error: "fee_cap_exceeded" });
      const message = String(reply.body.message);
      expect(message).toMatch(/could cost up to 0\.[0-9]+ of the native token/);
      expect(message).toMatch(/over the fee cap of 0\.01 of the native token for eip155:31337/);
      expect(message).toMatch(/--max-fee eip155:31337=<amount>/);
      expect(Number(reply.retryAfter)).toBeGreaterThan(0);
      expect(await ours(devnet)).toEqual(before);
    } finally {
      await server.close();
    }
  });

  test("a cap raised for this chain lets it through", async () => {
    const { server } = await serving(devnet, {
      maxFeeWeiByChain: { [devnet.chainId]: parseEther("1") },
    });
    try {
      const reply = await post(server, "/settle", await request());
      expect(reply.body).toMatchObject({ success: true });
    } finally {
      await server.close();
    }
  });
});

describe("a front-runner between us and the chain, with a fresh payer each time", () => {
  let devnet: Devnet;
  let proxy: RpcProxy;
  beforeAll(async () => {
    devnet = await startDevnet();
    proxy = await startRpcProxy(devnet.rpcUrl);
  });
  afterAll(async () => {
    await proxy?.close();
    await devnet?.stop();
  });

  async function attack(options: Partial<FacilitatorOptions>) {
    const facilitator = facilitatorOn(devnet, { rpcUrls: [proxy.url], ...options });
    const metrics = await createMetrics();
    metrics.attach(facilitator);
    const server = await startServer(createHandler(facilitator, { metrics }), { port: 0 });
    const keys = new Map<string, Hex>();
    try {
      // A payer that settled with us before the attack: it has a history, and so has the token.
      const regular = await payerHolding(devnet, 5_000n);
      const pay = async (payer: DevAccount) => {
        const requirements = requirementsV2(devnet, { amount: "1000" });
        return post(server, "/settle", {
          payload: await clientPayload(payer, requirements),
          requirements,
        });
      };
      expect((await pay(regular)).body).toMatchObject({ success: true });

      frontRun(devnet, proxy, keys);
      const before = await ours(devnet);
      const codes: string[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 30; i++) {
        const payer = await payerHolding(devnet, 1_000n);
        keys.set(payer.address.toLowerCase(), payer.privateKey);
        const reply = await pay(payer);
        codes.push(String(reply.body.error ?? "success"));
        if (reply.status === 429) retryAfter = reply.retryAfter;
      }
      const after = await ours(devnet);
      // The payer with a history is still served, during the attack.
      proxy.intercept = () => undefined;
      const served = await pay(regular);
      const text = (await metrics.render()).text;
      return {
        codes,
        retryAfter,
        sent: after.sent - before.sent,
        gasWei: before.wei - after.wei,
        served,
        text,
      };
    } finally {
      proxy.intercept = () => undefined;
      await server.close();
    }
  }

  test("without a budget every settle reverts; with the default one, wasted gas stops near 500,000 and payers with a history are still served", async () => {
    const unbounded = await attack({ wastedGasBudget: 10n ** 30n });
    expect(unbounded.codes.filter((c) => c === "settlement_failed")).toHaveLength(30);
    expect(unbounded.sent).toBe(30);

    const bounded = await attack({});
    const reverted = bounded.codes.filter((c) => c === "settlement_failed").length;
    const refused = bounded.codes.filter((c) => c === "payer_throttled").length;
    expect(reverted + refused).toBe(30);
    expect(bounded.sent).toBe(reverted);
    expect(refused).toBeGreaterThan(0);
    expect(Number(bounded.retryAfter)).toBeGreaterThan(0);
    // Once the budget is spent, no other fresh payer's settle is sent.
    expect(bounded.codes.slice(reverted).every((c) => c === "payer_throttled")).toBe(true);
    expect(bounded.served.body).toMatchObject({ success: true });
    const wasted = Number(
      /^facilitator_wasted_gas\{chain_id="31337"\} (\d+)$/m.exec(bounded.text)?.[1],
    );
    const budget = Number(
      /^facilitator_wasted_gas_budget\{chain_id="31337"\} (\d+)$/m.exec(bounded.text)?.[1],
    );
    expect(budget).toBe(500_000);
    expect(wasted).toBeGreaterThanOrEqual(500_000);
    expect(wasted).toBeLessThan(600_000);
    console.log(
      `front-running, 30 fresh payers: without a budget ${unbounded.sent} reverted transactions, ${unbounded.gasWei} wei; with the default budget ${bounded.sent} (${wasted} gas), ${refused} refused, ${bounded.gasWei} wei`,
    );
  }, 120_000);
});
