/**
 * What a voucher costs the RPC, counted by a proxy in front of a real anvil devnet. Before: a
 * voucher for a channel never opened cost 3 `eth_call`s every time (16,533 calls for 5,378 such
 * vouchers), and a voucher of a channel its payer signs for itself (no payer authorizer) an
 * `eth_getCode` each. Now a channel's state is one call, a refusal is read again at most twice per
 * channel and 2 seconds, and a payer's code is read once per 30 seconds.
 */
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import { type Hex, zeroAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import {
  batchRequirements,
  officialPayload,
  officialSigner,
  x402Request,
} from "./helpers/batch.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";

const PRICE = 1_000n;
const VOUCHERS = 200;

let devnet: Devnet;
let proxy: RpcProxy;
let facilitator: Facilitator;

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startRpcProxy(devnet.rpcUrl);
  facilitator = new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: privateKeyToAccount((devAccounts[7] as DevAccount).privateKey),
    receiptPollMs: 50,
  });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

const offer = () =>
  batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: (devAccounts[7] as DevAccount).address,
    price: PRICE,
  });

const body = (payload: unknown) => x402Request(offer(), payload);

/** A channel of `payer` signing its vouchers itself (no payer authorizer), with `salt`. */
function selfSigned(payer: DevAccount, salt: number) {
  const channelConfig = {
    payer: payer.address,
    payerAuthorizer: zeroAddress,
    receiver: devnet.payee.address,
    receiverAuthorizer: (devAccounts[7] as DevAccount).address,
    token: devnet.token.address,
    withdrawDelay: 900,
    salt: `0x${salt.toString(16).padStart(64, "0")}` as Hex,
  };
  const channelId = computeChannelId(channelConfig, devnet.network) as Hex;
  return async (amount: bigint) =>
    body({
      type: "voucher",
      channelConfig,
      voucher: await signVoucher(
        officialSigner(devnet, payer),
        channelId,
        amount.toString(),
        devnet.network,
      ),
    });
}

/**
 * The reads `work` makes of the settlement contract and of payers' code. (Signatures recovered
 * through the node's ecrecover precompile, where the wasm recovery serve loads is not loaded, are
 * not channel reads and are left out.)
 */
async function counted(work: () => Promise<void>) {
  let calls = 0;
  proxy.counts.clear();
  proxy.intercept = (method, params) => {
    const to = (params as { to?: string }[] | undefined)?.[0]?.to;
    if (method === "eth_call" && to?.toLowerCase() === SETTLEMENT_ADDRESS.toLowerCase()) calls++;
    return undefined;
  };
  await work();
  proxy.intercept = () => undefined;
  return { calls, codes: proxy.counts.get("eth_getCode") ?? 0 };
}

test(`${VOUCHERS} vouchers for a channel never opened: a few reads in all, one code read`, async () => {
  const pay = selfSigned(devnet.payers[0] as DevAccount, 1);
  const requests = await Promise.all(
    Array.from({ length: VOUCHERS }, (_, i) => pay(BigInt(i + 1) * PRICE)),
  );
  const started = Date.now();
  const { calls, codes } = await counted(async () => {
    for (const request of requests) {
      const reply = await handleVerify(facilitator, request);
      expect(reply.body).toMatchObject({
        isValid: false,
        invalidReason: "invalid_batch_settlement_evm_channel_not_found",
      });
    }
  });
  const windows = Math.ceil((Date.now() - started) / 2_000);
  // One read to learn it is empty, then at most two more per 2-second window.
  expect(calls).toBeLessThanOrEqual(1 + 2 * windows);
  expect(calls).toBeLessThan(VOUCHERS / 10);
  expect(codes).toBe(1);
});

test("a payer's vouchers on its open channel: its state read once, its code once", async () => {
  const payer = devnet.payers[1] as DevAccount;
  const deposit = await officialPayload(devnet, payer, offer(), 50);
  const opened = await handleSettle(facilitator, body(deposit));
  expect(opened.body, JSON.stringify(opened.body)).toMatchObject({ success: true });
  const config = (deposit as { channelConfig: Record<string, unknown> }).channelConfig;
  const channelId = computeChannelId(config as never, devnet.network) as Hex;
  const { calls } = await counted(async () => {
    for (let n = 2n; n <= 40n; n++) {
      const voucher = await signVoucher(
        officialSigner(devnet, payer),
        channelId,
        (n * PRICE).toString(),
        devnet.network,
      );
      const reply = await handleVerify(
        facilitator,
        body({ type: "voucher", channelConfig: config, voucher }),
      );
      expect(reply.body).toMatchObject({ isValid: true });
    }
  });
  expect(calls).toBeLessThanOrEqual(1);
});
