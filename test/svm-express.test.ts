/**
 * Issue 14, end to end on Solana: the official x402 stack (2.27) pays a Solana-priced route through
 * our `facilitator serve`. The local Solana devnet moves the money; `serve` runs as a child process
 * (the built bundle) with the devnet's RPC and its fee payer's key in FACILITATOR_SVM_PRIVATE_KEY
 * (the child's environment only, never its command line) and its state in a temporary directory.
 *
 * x402 v2: an Express resource server with @x402/express and the official @x402/svm server scheme
 * asks serve to verify and settle (HTTPFacilitatorClient); a buyer pays with @x402/fetch and the
 * official @x402/svm client scheme.
 *
 * x402 v1: the official resource server (@x402/core 2.27's x402ResourceServer) only answers with
 * v2 requirements and @x402/svm has no v1 server scheme, so the v1 seller here is a plain Express
 * route doing what a v1 middleware does (402 with v1 requirements; on X-PAYMENT, verify then settle
 * through the official HTTPFacilitatorClient; X-PAYMENT-RESPONSE); the buyer is the official one,
 * @x402/fetch with @x402/svm's v1 client scheme (ExactSvmSchemeV1) on "solana-devnet".
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme as ExactSvmClient } from "@x402/svm/exact/client";
import { ExactSvmScheme as ExactSvmServer } from "@x402/svm/exact/server";
import { ExactSvmSchemeV1 as ExactSvmClientV1 } from "@x402/svm/v1";
import express from "express";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type SvmDevKey,
  type SvmDevnet,
  secretKeyBytes,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { type Serving, startServe } from "./helpers/serve.js";
import { svmLamports, svmRpc, svmTokenBalance } from "./helpers/svm-devnet.js";

const PRICE = 10_000n;
const WEATHER = { city: "Lisbon", forecast: "sunny", celsius: 24 };

let devnet: SvmDevnet;
let serving: Serving;
let stateDir: string;
let resourceServer: Server;
let resourceUrl: string;
let resourceUrlV1: string;
let resourceUrlFresh: string;

function listen(app: express.Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", (error?: Error) => {
      if (error) reject(error);
      else resolve(server);
    });
  });
}

/**
 * serve's log lines after the first `from`, once there are `count` of them (or 5 s passed): a
 * line is written as its answer goes out, so it may reach us a little after the resource server
 * has answered its client.
 */
async function callsAfter(from: number, count: number): Promise<Record<string, unknown>[]> {
  const until = Date.now() + 5_000;
  while (facilitatorCalls().length < from + count && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return facilitatorCalls().slice(from);
}

/** serve's JSON log lines for /verify and /settle, in order. */
function facilitatorCalls(): Record<string, unknown>[] {
  return serving
    .stderr()
    .split("\n")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .filter((entry) => entry.path === "/verify" || entry.path === "/settle");
}

async function rpcResult<T>(method: string, params: unknown[]): Promise<T> {
  const { result, error } = await svmRpc(devnet, method, params);
  if (error) throw new Error(`${method}: ${error.message}`);
  return result as T;
}

/** Token units in `owner`'s USDC account (at confirmed, as a buyer's wallet would read it). */
const usdcBalance = (owner: string) => svmTokenBalance(devnet, owner, "confirmed");

const lamports = (owner: string) => svmLamports(devnet, owner, "confirmed");

function payer(index: number): SvmDevKey {
  const key = devnet.payers[index];
  if (!key) throw new Error(`the Solana devnet has no payer ${index}`);
  return key;
}

/**
 * A fetch that pays with the official SVM client as `key`, and the payment headers it sent
 * (PAYMENT-SIGNATURE for v2, X-PAYMENT for v1), for replaying them.
 */
async function payingFetch(key: SvmDevKey) {
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(key));
  // Spend controls only allow well-known assets: the devnet's test USDC is not one.
  const client = x402Client
    .fromConfig({ schemes: [], spendControls: false })
    .register(devnet.network, new ExactSvmClient(signer, { rpcUrl: devnet.rpcUrl }))
    .registerV1("solana-devnet", new ExactSvmClientV1(signer, { rpcUrl: devnet.rpcUrl }));
  const sent: Record<string, string>[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const payment = ["payment-signature", "x-payment"].flatMap((name) => {
      const value = request.headers.get(name);
      return value ? [[name, value] as const] : [];
    });
    if (payment.length > 0) sent.push(Object.fromEntries(payment));
    return fetch(request);
  };
  return { fetch: wrapFetchWithPayment(recording, client), sent };
}

/** The fee payer serve's /supported names for x402 v1 on solana-devnet. */
async function v1FeePayer(client: HTTPFacilitatorClient): Promise<string> {
  const supported = await client.getSupported();
  const kind = supported.kinds.find(
    (k) => k.x402Version === 1 && k.scheme === "exact" && String(k.network) === "solana-devnet",
  );
  const feePayer = (kind?.extra as { feePayer?: unknown } | undefined)?.feePayer;
  if (typeof feePayer !== "string") throw new Error("serve lists no v1 solana-devnet fee payer");
  return feePayer;
}

/** An x402 v1 seller of WEATHER on solana-devnet, as a v1 middleware would be. */
function v1Seller(client: HTTPFacilitatorClient, feePayer: string): express.RequestHandler {
  return async (request, response) => {
    const requirements = {
      scheme: "exact",
      network: "solana-devnet",
      maxAmountRequired: PRICE.toString(),
      resource: `http://${request.headers.host}${request.path}`,
      description: "Today's weather, paid on Solana (x402 v1)",
      mimeType: "application/json",
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 120,
      asset: devnet.mint.address,
      extra: { feePayer },
    };
    const refuse = (error: string) =>
      response.status(402).json({ x402Version: 1, error, accepts: [requirements] });
    const header = request.header("x-payment");
    if (!header) return refuse("X-PAYMENT header is required");
    try {
      const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
      // biome-ignore lint/suspicious/noExplicitAny: the client's types are version-specific unions.
      const verified = await client.verify(payload, requirements as any);
      if (!verified.isValid) return refuse(verified.invalidReason ?? "invalid payment");
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      const settled = await client.settle(payload, requirements as any);
      if (!settled.success) return refuse(settled.errorReason ?? "settlement failed");
      response.setHeader(
        "X-PAYMENT-RESPONSE",
        Buffer.from(JSON.stringify(settled)).toString("base64"),
      );
      return response.json(WEATHER);
    } catch (error) {
      return refuse(error instanceof Error ? error.message : String(error));
    }
  };
}

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
  stateDir = mkdtempSync(path.join(os.tmpdir(), "facilitator-svm-express-"));
  serving = await startServe(["--rpc-url", devnet.rpcUrl], {
    FACILITATOR_SVM_PRIVATE_KEY: devnet.feePayer.secretKey,
    XDG_STATE_HOME: stateDir,
  });

  // The resource server, as an x402 seller writes it; only the facilitator URL points at us.
  const facilitatorClient = new HTTPFacilitatorClient({ url: serving.url, timeoutMs: 30_000 });
  const route = (description: string) => ({
    accepts: {
      scheme: "exact",
      network: devnet.network,
      payTo: devnet.payee.address,
      // The devnet's USDC mint is no well-known asset: the price is an asset amount.
      price: { amount: PRICE.toString(), asset: devnet.mint.address },
      maxTimeoutSeconds: 120,
    },
    description,
    mimeType: "application/json",
  });
  const app = express();
  // The buyer's client fetches its own blockhash.
  app.use(
    paymentMiddleware(
      { "GET /weather": route("Today's weather, paid on Solana") },
      new x402ResourceServer(facilitatorClient).register(devnet.network, new ExactSvmServer()),
    ),
  );
  // The seller's server scheme puts a recent blockhash in the requirements (extra.recentBlockhash)
  // and the buyer's client signs with it.
  app.use(
    paymentMiddleware(
      { "GET /weather-fresh": route("Today's weather, paid on Solana, blockhash from the seller") },
      new x402ResourceServer(facilitatorClient).register(
        devnet.network,
        new ExactSvmServer({ rpcUrl: devnet.rpcUrl }),
      ),
    ),
  );
  app.get(["/weather", "/weather-fresh"], (_request, response) => {
    response.json(WEATHER);
  });
  app.get("/weather-v1", v1Seller(facilitatorClient, await v1FeePayer(facilitatorClient)));
  resourceServer = await listen(app);
  const origin = `http://127.0.0.1:${(resourceServer.address() as AddressInfo).port}`;
  resourceUrl = `${origin}/weather`;
  resourceUrlV1 = `${origin}/weather-v1`;
  resourceUrlFresh = `${origin}/weather-fresh`;
});

afterAll(async () => {
  if (resourceServer) {
    await new Promise<void>((resolve) => {
      resourceServer.close(() => resolve());
      resourceServer.closeAllConnections();
    });
  }
  if (serving) {
    serving.child.kill("SIGTERM");
    await serving.exited;
  }
  await devnet?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/**
 * One paid request at `url` by `buyer` through the official client: the content, the settlement
 * header, the balances, serve's verify and settle; then the same payment header replayed.
 */
async function payAndReplay(
  url: string,
  buyer: SvmDevKey,
  version: { paymentHeader: string; responseHeader: string; network: string },
) {
  const calls = facilitatorCalls().length;
  const { fetch: pay, sent } = await payingFetch(buyer);
  const [payeeBefore, payerBefore, payerSolBefore, feePayerSolBefore] = await Promise.all([
    usdcBalance(devnet.payee.address),
    usdcBalance(buyer.address),
    lamports(buyer.address),
    lamports(devnet.feePayer.address),
  ]);

  const response = await pay(url);
  const body = await response.text();
  // On failure, say what serve answered the resource server (its log lines may trail a little).
  if (response.status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
  const said = JSON.stringify(facilitatorCalls().slice(calls));
  expect({ status: response.status, body }, said).toEqual({
    status: 200,
    body: JSON.stringify(WEATHER),
  });

  const header = response.headers.get(version.responseHeader);
  expect(header).toBeTruthy();
  const settlement = decodePaymentResponseHeader(header ?? "");
  expect(settlement).toMatchObject({
    success: true,
    network: version.network,
    payer: buyer.address,
    // A Solana transaction signature: 64 bytes in base58.
    transaction: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/),
  });

  // The transaction landed, succeeded, and is the one the header names.
  const landed = await rpcResult<{ meta: { err: unknown; fee: number | string } } | null>(
    "getTransaction",
    [
      settlement.transaction,
      { commitment: "confirmed", encoding: "base64", maxSupportedTransactionVersion: 0 },
    ],
  );
  expect(landed?.meta.err).toBeNull();
  const fee = BigInt(landed?.meta.fee ?? 0);
  expect(fee).toBeGreaterThan(0n);

  const [payeeAfter, payerAfter, payerSolAfter, feePayerSolAfter] = await Promise.all([
    usdcBalance(devnet.payee.address),
    usdcBalance(buyer.address),
    lamports(buyer.address),
    lamports(devnet.feePayer.address),
  ]);
  expect(payeeAfter - payeeBefore).toBe(PRICE);
  expect(payerBefore - payerAfter).toBe(PRICE);
  // The facilitator's fee payer paid the network fee; the buyer paid no SOL at all.
  expect(payerSolAfter).toBe(payerSolBefore);
  expect(feePayerSolBefore - feePayerSolAfter).toBe(fee);

  // One payment header sent (the official client's header for the version), one verify and one
  // settle.
  expect(sent).toHaveLength(1);
  expect(Object.keys(sent[0] ?? {})).toEqual([version.paymentHeader]);
  const paid = await callsAfter(calls, 2);
  expect(paid).toEqual([
    expect.objectContaining({ path: "/verify", status: 200, payer: buyer.address }),
    expect.objectContaining({ path: "/settle", status: 200, payer: buyer.address }),
  ]);
  expect(paid.some((e) => "error" in e)).toBe(false);

  // The same payment header again: no content a second time, and no second transfer.
  const replay = await fetch(url, { headers: sent[0] });
  const replayBody = await replay.text();
  expect(replay.status).not.toBe(200);
  expect(replayBody).not.toContain(WEATHER.forecast);
  // Give a wrongly sent second transfer time to land before reading the balances.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(await usdcBalance(devnet.payee.address)).toBe(payeeAfter);
  expect(await usdcBalance(buyer.address)).toBe(payerAfter);
  // serve was asked (the refusal is the facilitator's, not the middleware's) and settled nothing.
  const replayCalls = await callsAfter(calls + 2, 1);
  expect(replayCalls.length).toBeGreaterThan(0);
  expect(
    replayCalls.filter((e) => e.path === "/settle" && e.status === 200 && !("error" in e)),
  ).toEqual([]);
}

describe("the official x402 stack paying a Solana-priced route through our serve", () => {
  test("serve was started without the fee payer's key on its command line or in its log", () => {
    const secret = devnet.feePayer.secretKey;
    expect(serving.child.spawnargs.join(" ")).not.toContain(secret);
    expect(serving.stderr()).not.toContain(secret);
  });

  test("an unpaid request is answered 402 with our fee payer, network and mint", async () => {
    const response = await fetch(resourceUrl);
    expect(response.status).toBe(402);
    const required = JSON.parse(
      Buffer.from(response.headers.get("payment-required") ?? "", "base64").toString("utf8"),
    );
    expect(required.x402Version).toBe(2);
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: devnet.network,
        amount: PRICE.toString(),
        asset: devnet.mint.address,
        payTo: devnet.payee.address,
        // From our /supported: the resource server learnt the fee payer from serve.
        extra: expect.objectContaining({ feePayer: devnet.feePayer.address }),
      }),
    ]);
    expect(facilitatorCalls()).toEqual([]);
  });

  test("x402 v2: a paid request gets the content once; the fee payer pays the fee; a replay is refused", async () => {
    await payAndReplay(resourceUrl, payer(0), {
      paymentHeader: "payment-signature",
      responseHeader: "payment-response",
      network: devnet.network,
    });
  });

  test("x402 v2 with the seller's blockhash in the requirements: the same", async () => {
    const unpaid = await fetch(resourceUrlFresh);
    const required = JSON.parse(
      Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString("utf8"),
    );
    expect(required.accepts[0]?.extra).toMatchObject({
      feePayer: devnet.feePayer.address,
      recentBlockhash: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
    });
    await payAndReplay(resourceUrlFresh, payer(2), {
      paymentHeader: "payment-signature",
      responseHeader: "payment-response",
      network: devnet.network,
    });
  });

  test("x402 v1: a paid request gets the content once; the fee payer pays the fee; a replay is refused", async () => {
    await payAndReplay(resourceUrlV1, payer(1), {
      paymentHeader: "x-payment",
      responseHeader: "x-payment-response",
      network: "solana-devnet",
    });
  });
});
