/**
 * batch-settlement end to end through our `serve`, with the official stack unchanged: an Express
 * resource server (@x402/express, the official batch-settlement server scheme, its channel
 * manager) whose HTTPFacilitatorClient points at us, and a buyer paying with @x402/fetch and the
 * official client scheme. One deposit, many vouchers, then claims, a settle and a refund through
 * our facilitator, on the devnet; balances exact to the unit. Both deposit methods.
 */
import type { Server } from "node:http";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { officialBuyer, officialSeller, type Token } from "./helpers/batch.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";

const PRICE = 1_000n;
const REQUESTS = 6;

let devnet: Devnet;
let facilitatorServer: RunningServer;
const servers: Server[] = [];
/** The receiver authorizer whose key our facilitator holds: sellers leave their claims to us. */
let authorizer: DevAccount;
/** The seller's API key: bound to its payTo, so our authorizer signs its refunds. */
const SELLER_KEY = "seller-key-0123456789abcdef";

beforeAll(async () => {
  devnet = await startDevnet();
  authorizer = devAccounts[7] as DevAccount;
  facilitatorServer = await startServer(
    createHandler(
      new Facilitator({
        rpcUrls: [devnet.rpcUrl],
        useDefaultRpcs: false,
        signer: privateKeyToAccount(devnet.facilitator.privateKey),
        receiverAuthorizer: privateKeyToAccount(authorizer.privateKey),
        offerReceiverAuthorizer: true,
      }),
      {
        apiKeys: {
          keys: [{ name: "seller", key: SELLER_KEY, receivers: [devnet.payee.address] }],
          anonymous: true,
        },
      },
    ),
    { host: "127.0.0.1", port: 0, log: () => undefined },
  );
});

afterAll(async () => {
  for (const server of servers) server.close();
  await facilitatorServer?.close();
  await devnet?.stop();
});

async function channelOf(payer: Address, token: Address, receiverAuthorizer: Address) {
  const config = {
    payer,
    payerAuthorizer: payer,
    receiver: devnet.payee.address,
    receiverAuthorizer,
    token,
    withdrawDelay: 900,
    salt: `0x${"0".repeat(64)}` as Hex,
  };
  // The official client's id for it, not ours: the test does not take our word for it.
  const id = computeChannelId(config, devnet.network) as Hex;
  const [balance, totalClaimed] = await chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });
  return { id, balance, totalClaimed };
}

describe.each([
  ["eip3009", 0],
  ["permit2", 1],
] as const)("the official stack through our serve, deposits by %s", (method, payerIndex) => {
  test(`${REQUESTS} paid requests over one deposit; claimed, settled and refunded through us`, async () => {
    const payer = devnet.payers[payerIndex] as DevAccount;
    const token: Token = method === "permit2" ? devnet.permitToken : devnet.token;
    if (method === "permit2") await approvePermit2(devnet, payer, token.address);
    const { url, manager } = await officialSeller(devnet, facilitatorServer.url, servers, {
      payTo: devnet.payee.address,
      price: PRICE,
      token,
      method,
      apiKey: SELLER_KEY,
    });
    const { pay } = officialBuyer(devnet, payer);
    const payerBefore = await tokenBalance(devnet, payer.address, token.address);
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address, token.address);

    for (let i = 0; i < REQUESTS; i++) {
      const response = await pay(`${url}/metered`);
      expect(response.status, await response.clone().text()).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
    }
    const authorizerAddress = privateKeyToAccount(authorizer.privateKey).address;
    const opened = await channelOf(payer.address, token.address, authorizerAddress);
    // The official client deposits 5 requests' worth at first, then again as it runs low.
    expect(opened.balance).toBeGreaterThanOrEqual(BigInt(REQUESTS) * PRICE);
    expect(opened.totalClaimed).toBe(0n);
    const deposited = payerBefore - (await tokenBalance(devnet, payer.address, token.address));
    expect(deposited).toBe(opened.balance);

    // The seller's channel manager claims and settles through us; we sign its claims.
    const { claims, settle } = await manager.claimAndSettle();
    expect(claims.length).toBeGreaterThan(0);
    expect(settle?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const claimed = await channelOf(payer.address, token.address, authorizerAddress);
    expect(claimed.totalClaimed).toBe(BigInt(REQUESTS) * PRICE);
    expect(await tokenBalance(devnet, devnet.payee.address, token.address)).toBe(
      payeeBefore + BigInt(REQUESTS) * PRICE,
    );

    // The rest goes back to the payer: every unit is accounted for.
    const refunds = await manager.refund([claimed.id]);
    expect(refunds).toHaveLength(1);
    const closed = await channelOf(payer.address, token.address, authorizerAddress);
    expect(closed.balance).toBe(claimed.totalClaimed);
    expect(await tokenBalance(devnet, payer.address, token.address)).toBe(
      payerBefore - BigInt(REQUESTS) * PRICE,
    );
  });
});
