/**
 * Bazaar discovery through the facilitator and its HTTP shell, without a chain (the EVM family's
 * verdicts are stubbed): what verify and settle say of a payment's discovery in EXTENSION-RESPONSES
 * (read back by the official HTTPFacilitatorClient), when it is catalogued (a settle that landed;
 * one answered `submitted` once the store says it landed), and GET /discovery/resources and
 * /discovery/search: the spec's filter conformance vectors V0-V7, malformed values, unknown
 * filters named, search pages, the official withBazaar client reading both.
 */
import { HTTPFacilitatorClient } from "@x402/core/server";
import { declareDiscoveryExtension, withBazaar } from "@x402/extensions/bazaar";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Catalogue } from "../src/bazaar/catalogue.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler, type HttpRequest } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { parseRequest } from "../src/protocol/request.js";
import type { SettleResult } from "../src/protocol/results.js";
import { Journal } from "../src/store/journal.js";

const PAYER = "0x857b06519E91e3A54538791bDbb0E22373e36b66";
const requirements = (network: string, payTo: string, scheme = "exact") => ({
  scheme,
  network,
  amount: "1000",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: "USDC", version: "2" },
});
const bazaar = (method: string) => {
  const declared = declareDiscoveryExtension({
    input: { q: "x" },
    inputSchema: { properties: { q: { type: "string" } } },
  }).bazaar as unknown as { info: { input: Record<string, unknown> } };
  declared.info.input.method = method;
  return declared;
};

/** An x402 v2 request body paying `accepted`, declaring discovery of `url`. */
function body(
  url: string,
  accepted: Record<string, unknown>,
  extensions: Record<string, unknown> = {},
) {
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url, description: `the resource at ${url}`, serviceName: "Test Shop" },
      accepted,
      payload: { signature: "0x00", authorization: { from: PAYER } },
      extensions: { bazaar: bazaar("GET"), ...extensions },
    },
    paymentRequirements: accepted,
  };
}

let facilitator: Facilitator;
let server: RunningServer;
const landed: SettleResult = { ok: true, payer: PAYER, transactionHash: `0x${"ab".repeat(32)}` };

beforeAll(async () => {
  facilitator = new Facilitator({ useDefaultRpcs: false, journal: new Journal() });
  // The chain's verdicts, stubbed: discovery reads the payment around them.
  facilitator.evm.claims = () => true;
  facilitator.evm.verify = async () => ({ ok: true, payer: PAYER });
  facilitator.evm.settle = async () => landed;
  server = await startServer(createHandler(facilitator), { port: 0 });
});
afterAll(async () => {
  await server?.close();
});

const get = (url: string): HttpRequest => ({ method: "GET", url, headers: {} });
const handle = (request: HttpRequest) => createHandler(facilitator)(request);
const catalogue = () => facilitator.discovery?.catalogue as Catalogue;

function sideChannel(headers: Record<string, string>) {
  const value = headers["extension-responses"];
  return value ? JSON.parse(Buffer.from(value, "base64").toString("utf8")) : undefined;
}

describe("EXTENSION-RESPONSES on verify and settle", () => {
  test("verify: processing (valid, catalogued once settled); settle: success, and it is listed", async () => {
    const client = new HTTPFacilitatorClient({ url: server.url });
    const request = body("https://shop.example/a", requirements("eip155:84532", "0xA11CE"));
    const verified = await client.verify(
      request.paymentPayload as never,
      request.paymentRequirements as never,
    );
    expect(verified.extensionResponses).toEqual({
      bazaar: {
        status: "processing",
        reason: expect.stringContaining("once this payment's settle lands"),
      },
    });
    expect((await catalogue().list({}, 10, 0)).total).toBe(0);

    const settled = await client.settle(
      request.paymentPayload as never,
      request.paymentRequirements as never,
    );
    expect(settled.extensionResponses).toEqual({ bazaar: { status: "success" } });
    // The spec's own example header, byte for byte.
    const again = await handle({
      method: "POST",
      url: "/settle",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(request)),
    });
    expect(again.headers["extension-responses"]).toBe(
      "eyJiYXphYXIiOnsic3RhdHVzIjoic3VjY2VzcyJ9fQ==",
    );
    const { items } = await catalogue().list({}, 10, 0);
    expect(items.map((e) => [e.resource, e.payer, e.serviceName])).toEqual([
      ["https://shop.example/a", PAYER, "Test Shop"],
    ]);
  });

  test("a dropped field is said on success; a wrong extension is rejected with its reason; neither changes the payment", async () => {
    const accepted = requirements("eip155:84532", "0xA11CE");
    const dropped = body("https://shop.example/icon", accepted);
    (dropped.paymentPayload.resource as Record<string, unknown>).iconUrl =
      "http://2130706433/i.png";
    const answer = await handle({
      method: "POST",
      url: "/settle",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(dropped)),
    });
    expect(JSON.parse(answer.body).success).toBe(true);
    expect(sideChannel(answer.headers)).toEqual({
      bazaar: {
        status: "success",
        reason: expect.stringContaining("iconUrl dropped: it has the IP address 127.0.0.1"),
      },
    });

    const wrong = body("https://shop.example/wrong", accepted, {
      bazaar: { ...bazaar("GET"), info: { input: { type: "http", method: "TRACE" } } },
    });
    const refused = await handle({
      method: "POST",
      url: "/verify",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(wrong)),
    });
    expect(JSON.parse(refused.body).isValid).toBe(true);
    expect(sideChannel(refused.headers)).toEqual({
      bazaar: {
        status: "rejected",
        rejectedReason: expect.stringContaining("info does not match its schema: /input/method"),
      },
    });
  });

  test("a reason quoting the buyer's own keys stays short enough for any HTTP client", async () => {
    const long = "k".repeat(12_000);
    const info = { input: { type: "http", method: "GET", queryParams: { [long]: 1 } } };
    const schema = {
      properties: {
        input: { properties: { queryParams: { additionalProperties: { type: "string" } } } },
      },
    };
    const hostile = body("https://shop.example/long", requirements("eip155:84532", "0xA11CE"), {
      bazaar: { info, schema },
    });
    const answer = await handle({
      method: "POST",
      url: "/verify",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(hostile)),
    });
    const { bazaar: said } = sideChannel(answer.headers);
    expect(said.status).toBe("rejected");
    expect(said.rejectedReason.length).toBeLessThanOrEqual(600);
    expect(answer.headers["extension-responses"]?.length).toBeLessThan(2_000);
  });

  test("a schema nested past the request's bound refuses the payment itself (invalid_request), not the catalogue", async () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 20; i++) deep = { type: "object", properties: { a: deep } };
    const nested = body("https://shop.example/deep", requirements("eip155:84532", "0xA11CE"), {
      bazaar: { info: { input: { type: "http" } }, schema: deep },
    });
    const before = (await catalogue().list({}, 100, 0)).total;
    const answer = await handle({
      method: "POST",
      url: "/settle",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(nested)),
    });
    expect(JSON.parse(answer.body)).toMatchObject({
      success: false,
      errorReason: "invalid_payload",
      errorMessage: expect.stringContaining(
        "paymentPayload.extensions is nested more than 32 levels deep",
      ),
    });
    expect((await catalogue().list({}, 100, 0)).total).toBe(before);
  });

  test("no extension, no header; a failed payment says nothing of discovery", async () => {
    const plain = body("https://shop.example/plain", requirements("eip155:84532", "0xA11CE"));
    delete (plain.paymentPayload.extensions as Record<string, unknown>).bazaar;
    const answer = await handle({
      method: "POST",
      url: "/verify",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify(plain)),
    });
    expect(answer.headers["extension-responses"]).toBeUndefined();

    const verify = facilitator.evm.verify;
    facilitator.evm.verify = async () => ({
      ok: false,
      failure: { code: "invalid_signature", message: "no" } as never,
    });
    try {
      const failed = await handle({
        method: "POST",
        url: "/verify",
        headers: { "content-type": "application/json" },
        body: Buffer.from(
          JSON.stringify(body("https://shop.example/f", requirements("eip155:84532", "0xA11CE"))),
        ),
      });
      expect(JSON.parse(failed.body).isValid).toBe(false);
      expect(failed.headers["extension-responses"]).toBeUndefined();
    } finally {
      facilitator.evm.verify = verify;
    }
  });

  test("a simulated settle catalogues nothing; a submitted one, once the store says it landed", async () => {
    const discovery = facilitator.discovery;
    if (!discovery) throw new Error("discovery is off");
    const parsed = parseRequest(
      body("https://shop.example/later", requirements("eip155:84532", "0xA11CE")),
    );
    if (!parsed.ok) throw new Error("unparsed");
    const hash = `0x${"cd".repeat(32)}`;
    const ok: SettleResult = { ok: true, payer: PAYER, transactionHash: hash };
    const simulated = await discovery.afterSettle(parsed.request, ok, "simulated");
    expect(simulated.ok && simulated.extensionResponses).toEqual({
      bazaar: { status: "rejected", rejectedReason: expect.stringContaining("simulated") },
    });
    const submitted = await discovery.afterSettle(parsed.request, ok, "submitted");
    expect(submitted.ok && submitted.extensionResponses).toEqual({
      bazaar: {
        status: "processing",
        reason: expect.stringContaining("once its transaction lands"),
      },
    });
    expect(discovery.watching).toBe(1);
    const listed = async () =>
      (await catalogue().list({}, 100, 0)).items.some(
        (e) => e.resource === "https://shop.example/later",
      );
    expect(await listed()).toBe(false);
    // The store writes the settlement down as it lands.
    const journal = facilitator.journal;
    await journal.recordSend(
      { key: "k-later", network: "eip155:84532", signer: PAYER as `0x${string}`, txNonce: 0 },
      hash as `0x${string}`,
      "0x00",
    );
    await journal.markAnswered("k-later");
    const until = Date.now() + 10_000;
    while (!(await listed()) && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    expect(await listed()).toBe(true);
    expect(discovery.watching).toBe(0);
  });

  test("/supported lists bazaar among the extensions", async () => {
    const supported = JSON.parse((await handle(get("/supported"))).body);
    expect(supported.extensions).toContain("bazaar");
  });
});

describe("GET /discovery/resources: the spec's filter conformance vectors", () => {
  beforeAll(async () => {
    // A catalogue with networks, schemes, payees and extensions to filter on.
    const put = (url: string, accepted: Record<string, unknown>, extensions = {}) => {
      const parsed = parseRequest(body(url, accepted, extensions));
      if (!parsed.ok) throw new Error("unparsed");
      return facilitator.settle(parsed.request);
    };
    await put(
      "https://v.example/one",
      requirements("eip155:8453", "0x0000000000000000000000000000000000000001", "batch-settlement"),
    );
    await put("https://v.example/two", requirements("eip155:84532", "0xB0B"), {
      "payment-identifier": { info: { id: "x".repeat(20) } },
    });
    await put("https://v.example/three", requirements("eip155:84532", "0xC4A"));
  });

  const resources = async (query: string) => {
    const answer = await handle(get(`/discovery/resources?${query}`));
    return { status: answer.status, body: JSON.parse(answer.body) };
  };

  /** The conformance rule for a well-formed value: named unapplied, or every item satisfies it. */
  function satisfies(item: Record<string, unknown>, param: string, value: string) {
    const accepts = item.accepts as Record<string, unknown>[];
    if (param === "network" || param === "scheme") return accepts.some((a) => a[param] === value);
    if (param === "payTo")
      return accepts.some((a) => String(a.payTo).toLowerCase() === value.toLowerCase());
    if (param === "type") return item.type === value;
    return value in (item.extensions as Record<string, unknown>);
  }

  test("V0 baseline: items of the documented shape", async () => {
    const { status, body: answer } = await resources("limit=50");
    expect(status).toBe(200);
    expect(answer.x402Version).toBe(2);
    expect(answer.pagination).toEqual({ limit: 50, offset: 0, total: answer.items.length });
    expect(answer.items.length).toBeGreaterThanOrEqual(3);
    for (const item of answer.items) {
      expect(item).toMatchObject({
        resource: expect.any(String),
        type: "http",
        x402Version: 2,
        accepts: expect.any(Array),
        lastUpdated: expect.any(String),
        extensions: { bazaar: expect.any(Object) },
      });
      expect(new Date(item.lastUpdated).toISOString()).toBe(item.lastUpdated);
    }
  });

  test.each([
    ["V1", "type", "mcp"],
    ["V2", "payTo", "0x0000000000000000000000000000000000000001"],
    ["V3", "scheme", "batch-settlement"],
    ["V4", "network", "eip155:999999999"],
    ["V5", "extensions", "payment-identifier"],
  ])(
    "%s: %s=%s is applied (every item satisfies it; empty is total 0)",
    async (_id, param, value) => {
      const { status, body: answer } = await resources(
        `limit=50&${param}=${encodeURIComponent(value)}`,
      );
      expect(status).toBe(200);
      expect(answer.unappliedFilters).toBeUndefined();
      for (const item of answer.items) expect(satisfies(item, param, value)).toBe(true);
      expect(answer.pagination.total).toBe(answer.items.length);
    },
  );

  test("V6: a malformed network is 400 with an error string", async () => {
    const { status, body: answer } = await resources("limit=50&network=!!!");
    expect(status).toBe(400);
    expect(answer.error).toBe("invalid_request");
    expect(answer.message).toMatch(/network must be a CAIP-2 network id/);
  });

  test("V7: the least common network present on some items selects those and no others", async () => {
    const baseline = (await resources("limit=50")).body.items as Record<string, unknown>[];
    const counts = new Map<string, number>();
    for (const item of baseline) {
      for (const n of new Set((item.accepts as { network: string }[]).map((a) => a.network)))
        counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    const [network] =
      [...counts].filter(([, c]) => c < baseline.length).sort((a, b) => a[1] - b[1])[0] ?? [];
    expect(network).toBeDefined();
    const { body: answer } = await resources(`limit=50&network=${network}`);
    expect(answer.items.length).toBeGreaterThan(0);
    expect(answer.items.length).toBeLessThan(baseline.length);
    for (const item of answer.items)
      expect(satisfies(item, "network", network as string)).toBe(true);
  });

  test("a filter we do not know is named in unappliedFilters; malformed limits, offsets and repeats are 400", async () => {
    const { body: answer } = await resources("category=finance&limit=50");
    expect(answer.unappliedFilters).toEqual(["category"]);
    expect(answer.items.length).toBeGreaterThanOrEqual(3);
    for (const query of [
      "limit=0",
      "limit=abc",
      "offset=-1",
      "network=eip155:1&network=eip155:2",
      "payTo=0x%20",
      "type=HTTP!",
      "extensions=a,b",
    ]) {
      const bad = await resources(query);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error, query).toBe("invalid_request");
      expect(bad.body.message, query).toBeTruthy();
    }
    // Past 100, a page is 100.
    expect((await resources("limit=5000")).body.pagination.limit).toBe(100);
  });
});

describe("GET /discovery/search, and the official withBazaar client", () => {
  test("query required; pages through a cursor; the official client reads both endpoints", async () => {
    const missing = await handle(get("/discovery/search"));
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body).message).toMatch(/query must be given/);
    expect((await handle(get("/discovery/search?query=x&cursor=nope"))).status).toBe(400);

    const client = withBazaar(new HTTPFacilitatorClient({ url: server.url }));
    const first = await client.extensions.bazaar.search({ query: "resource v.example", limit: 2 });
    expect(first.resources).toHaveLength(2);
    expect(first.pagination?.cursor).toEqual(expect.any(String));
    const next = await client.extensions.bazaar.search({
      query: "resource v.example",
      limit: 2,
      cursor: first.pagination?.cursor as string,
    });
    const seen = [...first.resources, ...next.resources].map((r) => r.resource);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(
      expect.arrayContaining([
        "https://v.example/one",
        "https://v.example/two",
        "https://v.example/three",
      ]),
    );

    const listed = await client.extensions.bazaar.listResources({
      type: "http",
      network: "eip155:8453",
    });
    expect(listed.items.map((r) => r.resource)).toEqual(["https://v.example/one"]);
    expect(listed.pagination.total).toBe(1);
    await expect(client.extensions.bazaar.listResources({ network: "!!!" })).rejects.toThrow(/400/);
  });

  test("without a catalogue in the store, discovery is off: 404, and /supported does not list it", async () => {
    const off = new Facilitator({ useDefaultRpcs: false, journal: bareStore() });
    const answer = await createHandler(off)(get("/discovery/resources"));
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body).message).toMatch(/discovery is off/);
    expect(JSON.parse((await createHandler(off)(get("/supported"))).body).extensions).not.toContain(
      "bazaar",
    );
  });
});

/** A store with everything of the journal's but a catalogue. */
function bareStore() {
  const journal = new Journal();
  return new Proxy(journal, {
    get: (target, name) => {
      if (name === "catalogue") return undefined;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
