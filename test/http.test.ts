/**
 * The HTTP handler in-process (no sockets): routes, statuses of both dialects, auth, content type,
 * /supported, /health and /llms.txt.
 */
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler, type HttpRequest } from "../src/http/handler.js";
import { ERRORS } from "../src/protocol/errors.js";

let devnet: Devnet;
let facilitator: Facilitator;

beforeAll(async () => {
  devnet = await startDevnet();
  facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
});

afterAll(async () => {
  await devnet?.stop();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}): HttpRequest => ({
  method: "POST",
  url,
  headers: { "content-type": "application/json", ...headers },
  body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
});
const get = (url: string): HttpRequest => ({ method: "GET", url, headers: {} });
const payer = (i: number) => {
  const account = devnet.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

describe("routes", () => {
  const handle = () => createHandler(facilitator);

  test("POST /verify in both dialects", async () => {
    const request = await signSampleRequest(devnet, { payer: payer(0) });
    const reference = await handle()(post("/verify", request));
    expect(reference.status).toBe(200);
    expect(JSON.parse(reference.body)).toEqual({ success: true, payer: payer(0).address });
    expect(reference.headers["content-type"]).toMatch(/^application\/json/);
    expect(reference.log).toEqual({ payer: payer(0).address });

    const x402 = await signSampleRequest(devnet, { payer: payer(0), dialect: "x402" });
    const answer = await handle()(post("/verify", x402));
    expect(JSON.parse(answer.body)).toEqual({ isValid: true, payer: payer(0).address });
  });

  test("a rejected payment: 400 in the reference dialect, 200 isValid:false in the x402 one", async () => {
    const request = (await signSampleRequest(devnet, { payer: payer(1) })) as {
      payload: unknown;
      requirements: Record<string, unknown>;
    };
    request.requirements.amount = "1";
    const reference = await handle()(post("/verify?x=1", request));
    expect(reference.status).toBe(400);
    expect(JSON.parse(reference.body)).toMatchObject({ success: false, error: "amount_mismatch" });
    expect(reference.log.error).toBe("amount_mismatch");

    const x402 = await handle()(
      post("/verify", {
        x402Version: 2,
        paymentPayload: request.payload,
        paymentRequirements: request.requirements,
      }),
    );
    expect(x402.status).toBe(200);
    expect(JSON.parse(x402.body)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
    });
  });

  test("POST /settle settles and a replay is refused", async () => {
    const request = await signSampleRequest(devnet, { payer: payer(2) });
    const first = await handle()(post("/settle", { ...request, waitUntil: "confirmed" }));
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({ success: true });
    const again = await handle()(post("/settle", request));
    expect(again.status).toBe(400);
    expect(JSON.parse(again.body)).toMatchObject({ success: false, error: "nonce_already_used" });
  });

  test("not JSON, wrong content type, unknown path, wrong method: the same error body", async () => {
    const cases: [HttpRequest, number, string][] = [
      [post("/verify", "{oops"), 400, "invalid_request"],
      [
        { ...post("/verify", {}), headers: { "content-type": "text/plain" } },
        400,
        "invalid_request",
      ],
      [{ ...post("/verify", {}), headers: {} }, 400, "invalid_request"],
      [get("/nowhere"), 404, "not_found"],
      [get("/verify"), 405, "method_not_allowed"],
      [{ method: "DELETE", url: "/settle", headers: {} }, 405, "method_not_allowed"],
      [post("/supported", {}), 405, "method_not_allowed"],
    ];
    for (const [request, status, code] of cases) {
      const response = await handle()(request);
      expect(response.status, `${request.method} ${request.url}`).toBe(status);
      expect(JSON.parse(response.body)).toMatchObject({
        success: false,
        error: code,
        message: expect.any(String),
      });
      expect(response.body).not.toMatch(/\bat .+\(.+:\d+:\d+\)/);
    }
    expect((await handle()(get("/verify"))).headers.allow).toBe("POST");
  });

  test("application/json with a charset and +json types are accepted", async () => {
    const request = await signSampleRequest(devnet, { payer: payer(0) });
    for (const type of ["application/json; charset=utf-8", "application/vnd.x402+json"]) {
      const response = await handle()(post("/verify", request, { "content-type": type }));
      expect(response.status).toBe(200);
    }
  });
});

describe("API key", () => {
  const handle = () => createHandler(facilitator, { apiKey: "s3cret-key" });

  test("/verify and /settle need the bearer key; the other endpoints do not", async () => {
    const request = await signSampleRequest(devnet, { payer: payer(0) });
    const attempts: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: "Bearer s3cret-ke" },
      { authorization: "s3cret-key" },
    ];
    for (const headers of attempts) {
      for (const path of ["/verify", "/settle"]) {
        const response = await handle()(post(path, request, headers));
        expect(response.status).toBe(401);
        expect(JSON.parse(response.body)).toMatchObject({ success: false, error: "unauthorized" });
        expect(response.body).not.toContain("s3cret");
      }
    }
    const ok = await handle()(post("/verify", request, { authorization: "Bearer s3cret-key" }));
    expect(ok.status).toBe(200);
    expect((await handle()(get("/supported"))).status).toBe(200);
    expect((await handle()(get("/llms.txt"))).status).toBe(200);
  });
});

describe("information endpoints", () => {
  test("/supported lists v2 for the configured chain and the signer, in the x402 shape", async () => {
    const response = await createHandler(facilitator)(get("/supported"));
    expect(JSON.parse(response.body)).toEqual({
      kinds: [
        {
          x402Version: 2,
          scheme: "exact",
          network: devnet.network,
          extra: { assetTransferMethods: ["eip3009", "permit2"] },
        },
        {
          x402Version: 2,
          scheme: "upto",
          network: devnet.network,
          extra: { facilitatorAddress: devnet.facilitator.address },
        },
        // No receiver authorizer key here: sellers sign their own claims, and no extra says ours.
        { x402Version: 2, scheme: "batch-settlement", network: devnet.network },
      ],
      extensions: ["eip2612GasSponsoring", "erc20ApprovalGasSponsoring", "bazaar"],
      signers: { "eip155:*": [devnet.facilitator.address] },
    });
  });

  test("/health is ok while the RPC answers, 503 when one cannot be reached", async () => {
    const ok = await createHandler(facilitator)(get("/health"));
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({
      status: "ok",
      networks: [{ network: devnet.network, ok: true, blockNumber: expect.any(String) }],
    });
    const partly = new Facilitator({
      rpcUrls: [devnet.rpcUrl, "http://user:pw@127.0.0.1:1/key"],
      useDefaultRpcs: false,
    });
    const degraded = await createHandler(partly)(get("/health"));
    expect(degraded.status).toBe(503);
    const body = JSON.parse(degraded.body);
    expect(body.status).toBe("degraded");
    expect(body.networks).toContainEqual({
      rpc: "http://127.0.0.1:1/…",
      ok: false,
      error: "unreachable",
    });
    expect(degraded.body).not.toContain("pw");
    expect(degraded.body).not.toContain("key");
  });

  test("/llms.txt indexes the endpoints and every error code", async () => {
    const response = await createHandler(facilitator)(get("/llms.txt"));
    expect(response.headers["content-type"]).toMatch(/^text\/plain/);
    for (const text of [
      "POST /verify",
      "POST /settle",
      "POST /accepts",
      "GET /supported",
      "GET /health",
      "GET /readyz",
      "GET /metrics",
      "insufficient_funds",
      "settlement_pending",
      "docs/errors.md",
      "facilitator pay",
    ]) {
      expect(response.body).toContain(text);
    }
    for (const code of Object.keys(ERRORS)) expect(response.body).toContain(`- ${code} (`);
  });
});
