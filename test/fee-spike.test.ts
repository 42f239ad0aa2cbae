/**
 * A fee spike between pricing and broadcast, on a real anvil: the facilitator prices a settlement,
 * then, just before the node sees the transaction, the next block's base fee jumps
 * (anvil_setNextBlockBaseFeePerGas, sent by an RPC proxy in front of anvil, so it happens at the
 * same point every run). The node refuses "max fee per gas less than block base fee"; the
 * transaction is priced again once, within the fee cap, and lands once. Over the cap, nothing is
 * sent and the answer is fee_cap_exceeded.
 */
import { type Address, createTestClient, type Hex, http, parseEther, parseGwei, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startDevnet({ chainId: 84532 });
  proxy = await startRpcProxy(devnet.rpcUrl);
});

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const sentBy = (who: Address) => chainOf(devnet).getTransactionCount({ address: who });
const SENDS = new Set(["eth_sendRawTransaction", "eth_sendRawTransactionSync"]);

/** The next block's base fee jumps to `gwei` just before the first broadcast reaches the node. */
function spikeAtFirstBroadcast(gwei: string): void {
  let spiked = false;
  proxy.intercept = (method) => {
    if (!SENDS.has(method) || spiked) return undefined;
    spiked = true;
    return {
      before: async () => {
        await anvil().request({
          method: "anvil_setNextBlockBaseFeePerGas",
          params: [toHex(parseGwei(gwei))],
        } as never);
      },
    };
  };
}

afterEach(async () => {
  proxy.intercept = () => undefined;
  // Back to a calm chain for the next test: a block at a base fee of 1 gwei.
  await anvil().request({
    method: "anvil_setNextBlockBaseFeePerGas",
    params: [toHex(parseGwei("1"))],
  } as never);
  await anvil().mine({ blocks: 1 });
});

/** A fee cap with room for a base fee of a few hundred gwei (the network's own is 0.003 ETH). */
const ROOMY_CAP = parseEther("0.1");

const facilitatorVia = (maxFeeWei: bigint) =>
  new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    maxFeeWei,
  });

async function payment(who: number) {
  const payer = devnet.payers[who];
  if (!payer) throw new Error(`no payer ${who}`);
  const requirements = requirementsV2(devnet);
  return { payload: await clientPayload(payer, requirements), requirements };
}

test("refused for a max fee below the new base fee, the settlement is priced again once and lands once", async () => {
  const facilitator = facilitatorVia(ROOMY_CAP);
  const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
  const nonceBefore = await sentBy(devnet.facilitator.address);
  proxy.counts.clear();
  spikeAtFirstBroadcast("30");

  const reply = await handleSettle(facilitator, await payment(1));

  expect(reply.body).toMatchObject({ success: true });
  const sends =
    (proxy.counts.get("eth_sendRawTransactionSync") ?? 0) +
    (proxy.counts.get("eth_sendRawTransaction") ?? 0);
  expect(sends).toBe(2);
  const receipt = await chainOf(devnet).getTransactionReceipt({
    hash: reply.body.transactionHash as Hex,
  });
  expect(receipt.status).toBe("success");
  // It paid the new base fee: priced again, not sent twice at the old price.
  expect(receipt.effectiveGasPrice).toBeGreaterThanOrEqual(parseGwei("30"));
  expect(await sentBy(devnet.facilitator.address)).toBe(nonceBefore + 1);
  expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 10_000n);
});

test("priced again over the fee cap, nothing is sent: fee_cap_exceeded, with Retry-After", async () => {
  // Room for the first price (about 2 gwei), not for a base fee of 5,000 gwei.
  const facilitator = facilitatorVia(parseEther("0.005"));
  const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
  const nonceBefore = await sentBy(devnet.facilitator.address);
  proxy.counts.clear();
  spikeAtFirstBroadcast("5000");

  const reply = await handleSettle(facilitator, await payment(2));

  expect(reply.body).toMatchObject({ success: false, error: "fee_cap_exceeded" });
  expect(reply.failure?.retryAfterSeconds).toBeGreaterThan(0);
  const sends =
    (proxy.counts.get("eth_sendRawTransactionSync") ?? 0) +
    (proxy.counts.get("eth_sendRawTransaction") ?? 0);
  expect(sends).toBe(1);
  await anvil().mine({ blocks: 1 });
  expect(await sentBy(devnet.facilitator.address)).toBe(nonceBefore);
  expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore);
});

test("a base fee that rises again after the new price: given up after one more price, nothing sent twice", async () => {
  const facilitator = facilitatorVia(ROOMY_CAP);
  const nonceBefore = await sentBy(devnet.facilitator.address);
  let sends = 0;
  // Every broadcast finds the next base fee ten times higher than the one before.
  let gwei = 3;
  proxy.intercept = (method) => {
    if (!SENDS.has(method)) return undefined;
    sends += 1;
    gwei *= 10;
    const fee = gwei;
    return {
      before: async () => {
        await anvil().request({
          method: "anvil_setNextBlockBaseFeePerGas",
          params: [toHex(parseGwei(String(fee)))],
        } as never);
      },
    };
  };

  const reply = await handleSettle(facilitator, await payment(3));

  expect(reply.body).toMatchObject({ success: false, error: "settlement_failed" });
  expect(reply.body.message).toMatch(/base fee/);
  expect(sends).toBe(2);
  await anvil().mine({ blocks: 1 });
  expect(await sentBy(devnet.facilitator.address)).toBe(nonceBefore);
});
