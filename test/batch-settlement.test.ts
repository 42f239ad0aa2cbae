/**
 * batch-settlement end to end through our `serve`, with the official stack unchanged: an Express
 * resource server (@x402/express, the official batch-settlement server scheme, its channel
 * manager) whose HTTPFacilitatorClient points at us, and a buyer paying with @x402/fetch and the
 * official client scheme. One deposit, many vouchers, then claims, a settle and a refund through
 * our facilitator, on the devnet; balances exact to the unit. Both deposit methods.
 */
import type { Server } from "node:http";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as BatchClient } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchServer } from "@x402/evm/batch-settlement/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import express from "express";
import { type Address, type Hex, hashTypedData } from "viem";
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
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { clientsOf } from "./helpers/permit2.js";

const PRICE = 1_000n;
const REQUESTS = 6;

let devnet: Devnet;
let facilitatorServer: RunningServer;
const servers: Server[] = [];
/** The receiver authorizer whose key our facilitator holds: sellers leave their claims to us. */
let authorizer: DevAccount;

function listen(app: express.Express): Promise<string> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", (error?: Error) => {
      if (error) reject(error);
      else {
        servers.push(server);
        const address = server.address();
        resolve(`http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
      }
    });
  });
}

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
      }),
    ),
    { host: "127.0.0.1", port: 0, log: () => undefined },
  );
});

afterAll(async () => {
  for (const server of servers) server.close();
  await facilitatorServer?.close();
  await devnet?.stop();
});

/** A seller on the official stack, its facilitator us; the route priced at PRICE per request. */
interface Token {
  readonly address: Address;
  readonly name: string;
  readonly version: string;
}

async function seller(method: "eip3009" | "permit2", token: Token) {
  const facilitator = new HTTPFacilitatorClient({ url: facilitatorServer.url, timeoutMs: 30_000 });
  const scheme = new BatchServer(devnet.payee.address, { withdrawDelay: 900 });
  const resources = new x402ResourceServer(facilitator).register(devnet.network, scheme);
  const app = express();
  app.use(
    paymentMiddleware(
      {
        "GET /metered": {
          accepts: {
            scheme: "batch-settlement",
            network: devnet.network,
            payTo: devnet.payee.address,
            price: {
              amount: PRICE.toString(),
              asset: token.address,
              extra: {
                name: token.name,
                version: token.version,
                ...(method === "permit2" ? { assetTransferMethod: "permit2" } : {}),
              },
            },
            maxTimeoutSeconds: 120,
          },
          description: "A metered resource",
          mimeType: "application/json",
        },
      },
      resources,
    ),
  );
  app.get("/metered", (_request, response) => {
    response.json({ ok: true });
  });
  const url = await listen(app);
  const manager = scheme.createChannelManager(facilitator, devnet.network, token.address);
  return { url, manager, scheme };
}

function buyer(payer: DevAccount) {
  const signer = toClientEvmSigner(
    privateKeyToAccount(payer.privateKey),
    clientsOf(devnet).publicClient as never,
  );
  // The devnet's tokens are no default assets: the buyer's spend controls would refuse them.
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new BatchClient(signer));
  return wrapFetchWithPayment(fetch, client);
}

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
  const id = hashTypedData({
    domain: {
      name: "x402 Batch Settlement",
      version: "1",
      chainId: devnet.chainId,
      verifyingContract: SETTLEMENT_ADDRESS,
    },
    types: {
      ChannelConfig: [
        { name: "payer", type: "address" },
        { name: "payerAuthorizer", type: "address" },
        { name: "receiver", type: "address" },
        { name: "receiverAuthorizer", type: "address" },
        { name: "token", type: "address" },
        { name: "withdrawDelay", type: "uint40" },
        { name: "salt", type: "bytes32" },
      ],
    },
    primaryType: "ChannelConfig",
    message: config,
  });
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
    const { url, manager } = await seller(method, token);
    const pay = buyer(payer);
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
