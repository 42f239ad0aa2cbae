/**
 * RPC URLs with credentials (`http://user:pass@host/path/KEY`): the credentials travel as a Basic
 * Authorization header (fetch refuses URLs that carry them) and never appear in an answer, a
 * message, /health or the CLI's output; when such an endpoint goes away, chain_unavailable names
 * the network and the endpoint as scheme, host and port only.
 */
import { rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler, type HttpRequest } from "../src/http/handler.js";
import { type BasicAuthProxy, startBasicAuthProxy } from "./helpers/basic-auth-proxy.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";

const USER = "settler";
// "@", a space and a character outside Latin-1: each must be percent-decoded, then sent as UTF-8.
const PASSWORD = "p@ss w€rd-5ecret";
const PATH_KEY = "k3y-in-the-path-0f9e8d7c";

let devnet: Devnet;
let proxy: BasicAuthProxy;
/** http://settler:p%40ss%20w%E2%82%ACrd-5ecret@127.0.0.1:<port>/v2/<key> */
let rpcUrl: string;
/** What every message must show instead: scheme, host and port. */
let shown: string;

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startBasicAuthProxy(devnet.rpcUrl, USER, PASSWORD);
  const { host } = new URL(proxy.url);
  rpcUrl = `http://${USER}:${encodeURIComponent(PASSWORD)}@${host}/v2/${PATH_KEY}`;
  shown = `http://${host}/…`;
});

afterAll(async () => {
  removeCliJournals();
  await proxy?.close();
  await devnet?.stop();
});

const payer = (i: number) => {
  const account = devnet.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

const post = (url: string, body: unknown): HttpRequest => ({
  method: "POST",
  url,
  headers: { "content-type": "application/json" },
  body: Buffer.from(JSON.stringify(body)),
});
const get = (url: string): HttpRequest => ({ method: "GET", url, headers: {} });

/** Neither the user, the password (raw or encoded) nor the key in the path shows up. */
function expectNoCredentials(text: string): void {
  for (const secret of [USER, "p@ss", "5ecret", encodeURIComponent(PASSWORD), PATH_KEY]) {
    expect(text, "a credential leaked").not.toContain(secret);
  }
}

describe("an RPC URL with user:password@", () => {
  it("verifies and settles, sending the credentials as Basic auth on every request", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [rpcUrl],
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
    });
    const handle = createHandler(facilitator);
    const verify = await handle(
      post("/verify", await signSampleRequest(devnet, { payer: payer(0) })),
    );
    expect(JSON.parse(verify.body)).toEqual({ success: true, payer: payer(0).address });
    const request = await signSampleRequest(devnet, { payer: payer(1) });
    const settle = await handle(post("/settle", { ...request, waitUntil: "confirmed" }));
    expect(JSON.parse(settle.body)).toMatchObject({ success: true });

    const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`, "utf8").toString("base64")}`;
    expect(proxy.seen.length).toBeGreaterThan(0);
    for (const seen of proxy.seen) {
      expect(seen).toEqual({ path: `/v2/${PATH_KEY}`, authorization: expected });
    }

    const health = await handle(get("/health"));
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body).networks).toEqual([
      expect.objectContaining({ network: devnet.network, rpc: shown, ok: true }),
    ]);
    const supported = await handle(get("/supported"));
    for (const text of [verify.body, settle.body, health.body, supported.body]) {
      expectNoCredentials(text);
    }
  });

  it("a wrong password is chain_unavailable naming the endpoint, not the credentials", async () => {
    const wrong = rpcUrl.replace(encodeURIComponent(PASSWORD), "wrong-password");
    const facilitator = new Facilitator({ rpcUrls: [wrong] });
    const reply = await createHandler(facilitator)(
      post("/verify", await signSampleRequest(devnet, { payer: payer(2) })),
    );
    expect(reply.status).toBe(503);
    const body = JSON.parse(reply.body);
    expect(body).toMatchObject({ success: false, error: "chain_unavailable" });
    expect(body.message).toBe(
      `${devnet.network}: the configured RPC ${shown} (HTTP 401) could not be reached to learn which chain it serves`,
    );
    expectNoCredentials(reply.body);
    expect(reply.body).not.toContain("wrong-password");
  });

  it("the CLI verifies through it and prints no credential", async () => {
    const file = path.join(os.tmpdir(), `facilitator-credentials-${process.pid}.json`);
    await writeFile(file, JSON.stringify(await signSampleRequest(devnet, { payer: payer(3) })));
    try {
      const run = await runCli(["verify", file, "--rpc-url", rpcUrl]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ success: true, payer: payer(3).address });
      expectNoCredentials(run.stdout + run.stderr);
    } finally {
      await rm(file, { force: true });
    }
  });
});

describe("an endpoint that goes away", () => {
  it("chain_unavailable names the network and the endpoint: verify and settle, both dialects", async () => {
    const own = await startBasicAuthProxy(devnet.rpcUrl, USER, PASSWORD);
    const { host } = new URL(own.url);
    const url = `http://${USER}:${encodeURIComponent(PASSWORD)}@${host}/v2/${PATH_KEY}`;
    const facilitator = new Facilitator({
      rpcUrls: [url],
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
      requestTimeoutMs: 2_000,
    });
    const handle = createHandler(facilitator);
    // Reachable at first: the chain is learned and the client made.
    expect((await handle(get("/supported"))).body).toContain(devnet.network);
    await own.close();

    const prefix = `${devnet.network} via http://${host}/…: `;
    const reference = await signSampleRequest(devnet, { payer: payer(4) });
    const x402 = await signSampleRequest(devnet, { payer: payer(4), dialect: "x402" });
    const verify = await handle(post("/verify", reference));
    const settle = await handle(post("/settle", reference));
    const verifyX402 = await handle(post("/verify", x402));
    const settleX402 = await handle(post("/settle", x402));

    expect(verify.status).toBe(503);
    expect(settle.status).toBe(500);
    for (const reply of [verify, settle]) {
      const body = JSON.parse(reply.body);
      expect(body).toMatchObject({ success: false, error: "chain_unavailable" });
      expect(body.message.startsWith(prefix), body.message).toBe(true);
    }
    const x402Verify = JSON.parse(verifyX402.body);
    expect(x402Verify).toMatchObject({ isValid: false, invalidReason: "unexpected_verify_error" });
    expect(x402Verify.invalidMessage.startsWith(prefix), x402Verify.invalidMessage).toBe(true);
    const x402Settle = JSON.parse(settleX402.body);
    expect(x402Settle).toMatchObject({ success: false, errorReason: "unexpected_settle_error" });
    expect(x402Settle.errorMessage.startsWith(prefix), x402Settle.errorMessage).toBe(true);
    for (const reply of [verify, settle, verifyX402, settleX402]) expectNoCredentials(reply.body);
  });

  it("from the CLI: an endpoint never reached is named with its reason, exit 3", async () => {
    const gone = await startBasicAuthProxy(devnet.rpcUrl, USER, PASSWORD);
    const { host } = new URL(gone.url);
    await gone.close();
    const url = `http://${USER}:${encodeURIComponent(PASSWORD)}@${host}/v2/${PATH_KEY}`;
    const file = path.join(os.tmpdir(), `facilitator-gone-${process.pid}.json`);
    await writeFile(file, JSON.stringify(await signSampleRequest(devnet, { payer: payer(0) })));
    try {
      for (const op of ["verify", "settle"]) {
        const run = await runCli([op, file, "--rpc-url", url], {
          FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
        });
        expect(run.code, run.stdout + run.stderr).toBe(3);
        expect(JSON.parse(run.stdout)).toEqual({
          success: false,
          error: "chain_unavailable",
          message: `${devnet.network}: the configured RPC http://${host}/… (connection refused) could not be reached to learn which chain it serves`,
        });
        expectNoCredentials(run.stdout + run.stderr);
      }
    } finally {
      await rm(file, { force: true });
    }
  });
});
