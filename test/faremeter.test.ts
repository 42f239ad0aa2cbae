/**
 * Interop with Faremeter (0.22): its Express middleware uses our `serve` as its facilitator
 * (POST /accepts to complete the requirements it offers, then /verify and /settle), and its
 * fetch wrapper pays the 402 with its own EIP-3009 signer. A devnet chain moves the money.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { wrap } from "@faremeter/fetch";
import { createMiddleware } from "@faremeter/middleware/express";
import { createPaymentHandler } from "@faremeter/payment-evm/exact";
import express from "express";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { tokenBalance } from "./helpers/chain.js";
import { type Serving, send, startServe } from "./helpers/serve.js";

const PRICE = 10_000n;
const WEATHER = { city: "Porto", forecast: "cloudy", celsius: 19 };

let devnet: Devnet;
let dir: string;
let serving: Serving;
let shop: Server;
let shopUrl: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-faremeter-")),
  ]);
  const keyFile = path.join(dir, "settle.key");
  await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  serving = await startServe(
    ["--private-key-file", keyFile, "--journal", path.join(dir, "journal.jsonl")],
    { FACILITATOR_RPC_URL: devnet.rpcUrl },
  );
  // The seller's side, as Faremeter documents it: only the facilitator URL points at us, and the
  // offer leaves the token's EIP-712 domain for the facilitator to fill in.
  const app = express();
  app.use(
    "/weather",
    await createMiddleware({
      facilitatorURL: serving.url,
      accepts: [
        {
          scheme: "exact",
          network: devnet.network,
          maxAmountRequired: PRICE.toString(),
          asset: devnet.token.address,
          payTo: devnet.payee.address,
          maxTimeoutSeconds: 120,
          resource: "http://localhost/weather",
          description: "Today's weather",
          mimeType: "application/json",
        },
      ],
    }),
  );
  app.get("/weather", (_request, response) => {
    response.json(WEATHER);
  });
  shop = await new Promise<Server>((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server));
  });
  const address = shop.address();
  shopUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}, 60_000);

afterAll(async () => {
  shop?.close();
  if (serving) {
    serving.child.kill("SIGTERM");
    await Promise.race([serving.exited, new Promise((r) => setTimeout(r, 5_000))]);
  }
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("POST /accepts", () => {
  test("completes what can be settled here and leaves out what cannot", async () => {
    const offered = {
      scheme: "exact",
      network: devnet.network,
      amount: "5000",
      asset: devnet.token.address,
      payTo: devnet.payee.address,
    };
    const answer = await send(serving.url, {
      path: "/accepts",
      body: JSON.stringify({
        x402Version: 2,
        resource: { url: "http://localhost/x" },
        accepts: [
          offered,
          { ...offered, network: "eip155:8453" },
          { ...offered, scheme: "upto" },
          { ...offered, asset: "not an address" },
        ],
      }),
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body ?? "")).toEqual({
      x402Version: 2,
      resource: { url: "http://localhost/x" },
      accepts: [{ ...offered, maxTimeoutSeconds: 300, extra: { name: "USDC", version: "2" } }],
    });
  });

  test("a body without accepts is invalid_request", async () => {
    const answer = await send(serving.url, { path: "/accepts", body: "{}" });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body ?? "")).toMatchObject({ error: "invalid_request" });
  });
});

describe("Faremeter's middleware and fetch against our serve", () => {
  test("an unpaid request is answered 402", async () => {
    const response = await fetch(`${shopUrl}/weather`);
    expect(response.status).toBe(402);
  });

  test("the buyer pays with Faremeter's EIP-3009 signer and gets the resource; the money moves once", async () => {
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const account = privateKeyToAccount(payer.privateKey);
    const handler = createPaymentHandler(
      { chain: { id: devnet.chainId, name: "devnet" }, address: account.address, account },
      { asset: { address: devnet.token.address, contractName: devnet.token.name } },
    );
    const paidFetch = wrap(fetch, { handlers: [handler] });
    const before = await tokenBalance(devnet, devnet.payee.address);
    const response = await paidFetch(`${shopUrl}/weather`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(WEATHER);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + PRICE);
  });
});
