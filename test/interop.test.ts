/**
 * Interop: the official x402 stack (2.27) runs unchanged against our `serve`. An Express resource
 * server with @x402/express asks our facilitator (through @x402/core's HTTPFacilitatorClient) to
 * verify and settle; a buyer pays with @x402/fetch and the official EVM client scheme; a devnet
 * chain moves the money.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServer } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import express from "express";
import { type Address, erc20Abi, type Hex, parseEventLogs } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";

const PRICE = 10_000n;
const WEATHER = { city: "Lisbon", forecast: "sunny", celsius: 24 };

let devnet: Devnet;
let facilitatorServer: RunningServer;
let resourceServer: Server;
let resourceUrl: string;
let permit2Server: Server;
let permit2Url: string;
const facilitatorLog: Record<string, unknown>[] = [];

const chain = () => chainOf(devnet);

const balanceOf = (who: Address) => tokenBalance(devnet, who);

function firstPayer(): DevAccount {
  const payer = devnet.payers[0];
  if (!payer) throw new Error("the devnet has no payers");
  return payer;
}

function listen(app: express.Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", (error?: Error) => {
      if (error) reject(error);
      else resolve(server);
    });
  });
}

beforeAll(async () => {
  devnet = await startDevnet();
  facilitatorServer = await startServer(
    createHandler(
      new Facilitator({
        rpcUrls: [devnet.rpcUrl],
        useDefaultRpcs: false,
        signer: privateKeyToAccount(devnet.facilitator.privateKey),
      }),
    ),
    { host: "127.0.0.1", port: 0, log: (entry) => facilitatorLog.push(entry) },
  );

  // The resource server, as an x402 seller writes it; only the facilitator URL points at us.
  const resources = new x402ResourceServer(
    new HTTPFacilitatorClient({ url: facilitatorServer.url, timeoutMs: 30_000 }),
  ).register(devnet.network, new ExactEvmServer());
  const app = express();
  app.use(
    paymentMiddleware(
      {
        "GET /weather": {
          accepts: {
            scheme: "exact",
            network: devnet.network,
            payTo: devnet.payee.address,
            // The devnet token is no well-known asset, so the price is an asset amount with the
            // token's EIP-712 domain rather than a dollar string.
            price: {
              amount: PRICE.toString(),
              asset: devnet.token.address,
              extra: { name: devnet.token.name, version: devnet.token.version },
            },
            maxTimeoutSeconds: 120,
          },
          description: "Today's weather",
          mimeType: "application/json",
        },
      },
      resources,
    ),
  );
  app.get("/weather", (_request, response) => {
    response.json(WEATHER);
  });
  // The same resource priced in a token without EIP-3009: paid through Permit2, once with an
  // approval the payer made, once with the eip2612GasSponsoring extension instead.
  const permit2Route = (extensions?: Record<string, unknown>) => ({
    accepts: {
      scheme: "exact",
      network: devnet.network,
      payTo: devnet.payee.address,
      price: {
        amount: PRICE.toString(),
        asset: devnet.permitToken.address,
        extra: {
          name: devnet.permitToken.name,
          version: devnet.permitToken.version,
          assetTransferMethod: "permit2",
        },
      },
      maxTimeoutSeconds: 120,
    },
    description: "Today's weather, paid through Permit2",
    mimeType: "application/json",
    ...(extensions ? { extensions } : {}),
  });
  const permit2App = express();
  permit2App.use(
    paymentMiddleware(
      {
        "GET /permit2": permit2Route(),
        "GET /permit2-sponsored": permit2Route({
          eip2612GasSponsoring: { info: { description: "gasless approval", version: "1" } },
        }),
      },
      resources,
    ),
  );
  permit2App.get(["/permit2", "/permit2-sponsored"], (_request, response) => {
    response.json(WEATHER);
  });
  permit2Server = await listen(permit2App);
  permit2Url = `http://127.0.0.1:${(permit2Server.address() as AddressInfo).port}`;
  resourceServer = await listen(app);
  resourceUrl = `http://127.0.0.1:${(resourceServer.address() as AddressInfo).port}/weather`;
});

afterAll(async () => {
  for (const server of [resourceServer, permit2Server]) {
    if (!server) continue;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
  await facilitatorServer?.close();
  await devnet?.stop();
});

describe("the official x402 stack against our serve", () => {
  test("an unpaid request is answered 402 with our network and token in the requirements", async () => {
    const response = await fetch(resourceUrl);
    expect(response.status).toBe(402);
    const header = response.headers.get("payment-required");
    expect(header).toBeTruthy();
    const required = JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"));
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: devnet.network,
        amount: PRICE.toString(),
        asset: devnet.token.address,
        payTo: devnet.payee.address,
      }),
    ]);
    expect(facilitatorLog.some((e) => e.path === "/verify" || e.path === "/settle")).toBe(false);
  });

  test("a paid request gets the resource, and the payee is paid exactly once", async () => {
    const payer = firstPayer();
    // Spend controls only allow well-known assets: the devnet token is not one.
    const client = x402Client
      .fromConfig({ schemes: [], spendControls: false })
      .register(devnet.network, new ExactEvmClient(privateKeyToAccount(payer.privateKey)));
    const payingFetch = wrapFetchWithPayment(fetch, client);

    const [payeeBefore, payerBefore] = await Promise.all([
      balanceOf(devnet.payee.address),
      balanceOf(payer.address),
    ]);
    const response = await payingFetch(resourceUrl);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(WEATHER);

    const header = response.headers.get("payment-response");
    expect(header).toBeTruthy();
    const settlement = decodePaymentResponseHeader(header ?? "");
    expect(settlement).toMatchObject({
      success: true,
      network: devnet.network,
      payer: payer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    const receipt = await chain().getTransactionReceipt({ hash: settlement.transaction as Hex });
    expect(receipt.status).toBe("success");
    const transfers = parseEventLogs({
      abi: testUsdcAbi,
      logs: receipt.logs,
      eventName: "Transfer",
    });
    expect(transfers.map((t) => t.args)).toEqual([
      { from: payer.address, to: devnet.payee.address, value: PRICE },
    ]);

    expect(await balanceOf(devnet.payee.address)).toBe(payeeBefore + PRICE);
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);

    // Our server answered the resource server's /verify and /settle, once each, both successful.
    const calls = facilitatorLog.filter((e) => e.path === "/verify" || e.path === "/settle");
    expect(calls).toEqual([
      expect.objectContaining({
        method: "POST",
        path: "/verify",
        status: 200,
        payer: payer.address,
      }),
      expect.objectContaining({
        method: "POST",
        path: "/settle",
        status: 200,
        payer: payer.address,
      }),
    ]);
    expect(calls.some((e) => "error" in e)).toBe(false);
  });
});

describe("the official x402 stack paying a Permit2-priced route through our serve", () => {
  const permitBalance = (who: Address) =>
    chain().readContract({
      address: devnet.permitToken.address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [who],
    });

  function payingFetch(payer: DevAccount) {
    const client = x402Client
      .fromConfig({ schemes: [], spendControls: false })
      .register(
        devnet.network,
        new ExactEvmClient(privateKeyToAccount(payer.privateKey), { rpcUrl: devnet.rpcUrl }),
      );
    return wrapFetchWithPayment(fetch, client);
  }

  test.each([
    ["a payer that approved Permit2", "/permit2", 2, true],
    ["a payer that did not, with eip2612GasSponsoring", "/permit2-sponsored", 3, false],
  ] as const)("%s gets the resource and pays once", async (_name, path, index, approve) => {
    const payer = devnet.payers[index] as DevAccount;
    if (approve) await approvePermit2(devnet, payer, devnet.permitToken.address);
    const before = await permitBalance(devnet.payee.address);
    const response = await payingFetch(payer)(`${permit2Url}${path}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(WEATHER);
    const settlement = decodePaymentResponseHeader(response.headers.get("payment-response") ?? "");
    expect(settlement).toMatchObject({ success: true, payer: payer.address });
    const receipt = await chain().getTransactionReceipt({ hash: settlement.transaction as Hex });
    expect(receipt.status).toBe("success");
    expect(receipt.to?.toLowerCase()).toBe(devnet.exactPermit2Proxy.toLowerCase());
    expect(await permitBalance(devnet.payee.address)).toBe(before + PRICE);
  });
});
