/**
 * Bazaar discovery end to end, official packages on every side but ours: an @x402/express seller
 * declaring discovery with declareDiscoveryExtension (and bazaarResourceServerExtension, which
 * fills in the method and the route template per request), an @x402/fetch buyer paying on the
 * devnet, our real `facilitator serve` (a child process) verifying and settling, and the official
 * withBazaar client listing and searching what was paid for. The official extractDiscoveryInfo,
 * run on the very payments the buyer sent, is the oracle for what is listed. The seller hears in
 * EXTENSION-RESPONSES what became of each declaration; others paying through us for the seller's
 * URL to their own addresses change nothing of its entry; the catalogue outlives a restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServer } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import {
  bazaarResourceServerExtension,
  declareDiscoveryExtension,
  extractDiscoveryInfo,
  withBazaar,
} from "@x402/extensions/bazaar";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import express from "express";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { listen } from "./helpers/batch.js";
import { type Serving, startServe } from "./helpers/serve.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const PRICE = "1000";

let devnet: Devnet;
let stateDir: string;
let serving: Serving;
let sellerUrl: string;
const servers: Server[] = [];
/** What the seller's facilitator client heard, per call. */
const heard: { op: "verify" | "settle"; bazaar: unknown }[] = [];
/** Each payment the buyer sent, decoded, with the URL it paid for. */
const paid: { url: string; payload: Record<string, unknown> }[] = [];

/** The seller's facilitator client, recording the side channel as the official server gets it. */
class RecordingClient extends HTTPFacilitatorClient {
  override async verify(...args: Parameters<HTTPFacilitatorClient["verify"]>) {
    const result = await super.verify(...args);
    heard.push({ op: "verify", bazaar: result.extensionResponses?.bazaar });
    return result;
  }
  override async settle(...args: Parameters<HTTPFacilitatorClient["settle"]>) {
    const result = await super.settle(...args);
    heard.push({ op: "settle", bazaar: result.extensionResponses?.bazaar });
    return result;
  }
}

async function serve(): Promise<Serving> {
  return startServe(["--rpc-url", devnet.rpcUrl], {
    XDG_STATE_HOME: stateDir,
    FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
  });
}

async function startSeller(facilitatorUrl: string): Promise<string> {
  const resources = new x402ResourceServer(
    new RecordingClient({ url: facilitatorUrl, timeoutMs: 30_000 }),
  )
    .register(devnet.network, new ExactEvmServer())
    .registerExtension(bazaarResourceServerExtension);
  const accepts = {
    scheme: "exact",
    network: devnet.network,
    payTo: devnet.payee.address,
    price: {
      amount: PRICE,
      asset: devnet.token.address,
      extra: { name: devnet.token.name, version: devnet.token.version },
    },
    maxTimeoutSeconds: 120,
  };
  const route = (config: Record<string, unknown>) => ({
    accepts,
    mimeType: "application/json",
    ...config,
  });
  const app = express();
  app.use(express.json());
  app.use(
    paymentMiddleware(
      {
        "GET /weather/:city": route({
          description: "Today's weather in a city",
          serviceName: "Devnet Weather",
          tags: ["weather", "forecast"],
          iconUrl: "https://cdn.example.com/weather.png",
          extensions: declareDiscoveryExtension({
            input: { units: "metric" },
            inputSchema: {
              properties: { units: { type: "string", enum: ["metric", "imperial"] } },
            },
            output: { example: { city: "Lisbon", celsius: 24 } },
          }),
        }),
        "POST /search": route({
          description: "Full-text search over the archive",
          extensions: declareDiscoveryExtension({
            bodyType: "json",
            input: { query: "x402" },
            inputSchema: { properties: { query: { type: "string" } }, required: ["query"] },
          }),
        }),
        "GET /hostile": route({
          description: "A seller whose metadata breaks the rules",
          serviceName: "A service name far longer than thirty-two characters",
          tags: ["one", "two", "three", "four", "five", "six"],
          iconUrl: "http://2130706433/icon.png",
          extensions: declareDiscoveryExtension({ input: {}, inputSchema: { properties: {} } }),
        }),
        "GET /broken": route({
          description: "A declaration whose info breaks its own schema",
          extensions: {
            bazaar: {
              info: { input: { type: "http", method: "GET", queryParams: { n: "seven" } } },
              schema: {
                type: "object",
                properties: {
                  input: {
                    type: "object",
                    properties: { queryParams: { properties: { n: { type: "integer" } } } },
                  },
                },
              },
            },
          },
        }),
      },
      resources,
    ),
  );
  app.get("/weather/:city", (request, response) => {
    response.json({ city: request.params.city, celsius: 24 });
  });
  app.post("/search", (_request, response) => {
    response.json({ results: [] });
  });
  app.get("/hostile", (_request, response) => {
    response.json({ ok: true });
  });
  app.get("/broken", (_request, response) => {
    response.json({ ok: true });
  });
  return listen(app, servers);
}

function buyer(payer: DevAccount) {
  const client = x402Client
    .fromConfig({ schemes: [], spendControls: false })
    .register(devnet.network, new ExactEvmClient(privateKeyToAccount(payer.privateKey)));
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get("payment-signature");
    if (header) {
      paid.push({
        url: request.url,
        payload: JSON.parse(Buffer.from(header, "base64").toString("utf8")),
      });
    }
    return fetch(request);
  };
  return wrapFetchWithPayment(recording, client);
}

beforeAll(async () => {
  devnet = await startDevnet();
  stateDir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bazaar-e2e-"));
  serving = await serve();
  sellerUrl = await startSeller(serving.url);
}, 90_000);

afterAll(async () => {
  for (const server of servers) server.close();
  serving?.child.kill("SIGTERM");
  await serving?.exited;
  await devnet?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const bazaarClient = () =>
  withBazaar(new HTTPFacilitatorClient({ url: serving.url })).extensions.bazaar;

describe("an official seller, an official buyer, our serve, the official bazaar client", () => {
  test("what was paid for is listed as the official extraction says; the seller hears why or why not", async () => {
    const supported = (await (await fetch(`${serving.url}/supported`)).json()) as {
      extensions: string[];
    };
    expect(supported.extensions).toContain("bazaar");

    const pay = buyer(devnet.payers[0] as DevAccount);
    for (const [url, init] of [
      [`${sellerUrl}/weather/lisbon?units=metric`, undefined],
      [`${sellerUrl}/weather/paris`, undefined],
      [
        `${sellerUrl}/search`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: "x402" }),
        },
      ],
      [`${sellerUrl}/hostile`, undefined],
      [`${sellerUrl}/broken`, undefined],
    ] as const) {
      const response = await pay(url, init);
      expect(response.status, `${url}: ${await response.clone().text()}`).toBe(200);
    }

    expect(paid).toHaveLength(5);
    // What the seller heard: valid at verify, catalogued at settle; dropped fields said; the
    // broken declaration refused with its reason. The payments themselves all went through.
    const settles = heard.filter((h) => h.op === "settle").map((h) => h.bazaar);
    const verifies = heard.filter((h) => h.op === "verify").map((h) => h.bazaar);
    expect(verifies.slice(0, 4)).toEqual(
      Array(4).fill(expect.objectContaining({ status: "processing" })),
    );
    expect(settles.slice(0, 3)).toEqual([
      { status: "success" },
      { status: "success" },
      { status: "success" },
    ]);
    expect(settles[3]).toEqual({
      status: "success",
      reason: expect.stringMatching(
        /serviceName dropped.*tags: 1 past the first 5 dropped.*iconUrl dropped: it has the IP address 127\.0\.0\.1/,
      ),
    });
    const broken = {
      status: "rejected",
      rejectedReason: expect.stringContaining(
        "info does not match its schema: /input/queryParams/n: must be integer",
      ),
    };
    expect(verifies[4]).toEqual(broken);
    expect(settles[4]).toEqual(broken);

    const { items, pagination } = await bazaarClient().listResources();
    expect(items.map((i) => i.resource).sort()).toEqual([
      `${sellerUrl}/hostile`,
      `${sellerUrl}/search`,
      `${sellerUrl}/weather/:city`,
    ]);
    expect(pagination.total).toBe(3);

    // The oracle: the official extraction of each payment the buyer sent, against what we list.
    const byResource = new Map(items.map((i) => [i.resource, i]));
    for (const { url, payload } of paid.filter((p) => !p.url.endsWith("/broken"))) {
      const official = extractDiscoveryInfo(
        payload as never,
        (payload as { accepted: never }).accepted,
      ) as Record<string, unknown> | null;
      expect(official, url).not.toBeNull();
      const item = byResource.get(official?.resourceUrl as string) as unknown as Record<
        string,
        unknown
      >;
      expect(item, url).toBeDefined();
      for (const field of ["description", "mimeType", "serviceName", "tags", "iconUrl"]) {
        expect(item[field], `${url} ${field}`).toEqual(official?.[field]);
      }
      const bazaar = (item.extensions as { bazaar: { info: unknown; routeTemplate?: string } })
        .bazaar;
      expect(bazaar.routeTemplate).toBe(official?.routeTemplate);
      // Paris paid last, so its path parameter is the one kept.
      if (!url.includes("/lisbon")) expect(bazaar.info).toEqual(official?.discoveryInfo);
      expect(item.accepts).toEqual([
        expect.objectContaining({
          scheme: "exact",
          network: devnet.network,
          amount: PRICE,
          payTo: devnet.payee.address,
        }),
      ]);
    }
  });

  test("listing filters and search, through the official client", async () => {
    const client = bazaarClient();
    expect((await client.listResources({ network: devnet.network })).items).toHaveLength(3);
    expect((await client.listResources({ network: "eip155:1" })).items).toEqual([]);
    expect(
      (await client.listResources({ payTo: devnet.payee.address.toLowerCase() })).items,
    ).toHaveLength(3);
    expect((await client.listResources({ type: "mcp" })).pagination.total).toBe(0);
    const page = await client.listResources({ limit: 2, offset: 2 });
    expect([page.items.length, page.pagination]).toEqual([1, { limit: 2, offset: 2, total: 3 }]);

    const found = await client.search({ query: "weather in Lisbon" });
    expect(found.resources[0]?.resource).toBe(`${sellerUrl}/weather/:city`);
    const archive = await client.search({ query: "archive", type: "http" });
    expect(archive.resources.map((r) => r.resource)).toEqual([`${sellerUrl}/search`]);
    await expect(client.listResources({ network: "!!!" })).rejects.toThrow(/400.*CAIP-2/);
  });

  test("others paying through us for the seller's URL, to their own addresses, leave the seller's entry as it is", async () => {
    const weather = paid.find((p) => p.url.includes("/weather/lisbon"))?.payload as {
      resource: Record<string, unknown>;
      extensions: { bazaar: unknown };
    };
    const attacker = devnet.payers[1] as DevAccount;
    // Five payees of the attacker's (one more than the others' requirements an entry keeps).
    const payees = [1, 2, 3, 4, 5].map(
      (i) => `0x${String(i).repeat(4)}${"a7".repeat(18)}` as const,
    );
    for (const payTo of payees) {
      const requirements = requirementsV2(devnet, { amount: "1", payTo });
      const payload = {
        ...(await clientPayload(attacker, requirements)),
        resource: { ...weather.resource, description: `Pay ${payTo} instead` },
        extensions: { bazaar: weather.extensions.bazaar },
      };
      const response = await fetch(`${serving.url}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          x402Version: 2,
          paymentPayload: payload,
          paymentRequirements: requirements,
        }),
      });
      expect(await response.json()).toMatchObject({ success: true });
      // Paid, and listed beside the seller's requirement: the answer says success.
      expect(
        JSON.parse(
          Buffer.from(response.headers.get("extension-responses") ?? "", "base64").toString(),
        ),
      ).toEqual({ bazaar: { status: "success" } });
    }
    const { items } = await bazaarClient().listResources({ payTo: devnet.payee.address });
    const item = items.find((i) => i.resource === `${sellerUrl}/weather/:city`);
    expect(item?.description).toBe("Today's weather in a city");
    expect(item?.accepts.map((a) => a.payTo)).toEqual([
      devnet.payee.address,
      ...payees.slice(1).reverse(),
    ]);
  }, 60_000);

  test("the catalogue is in the journal: a restarted serve lists it", async () => {
    serving.child.kill("SIGTERM");
    await serving.exited;
    serving = await serve();
    const { items } = await bazaarClient().listResources();
    expect(items.map((i) => i.resource).sort()).toEqual([
      `${sellerUrl}/hostile`,
      `${sellerUrl}/search`,
      `${sellerUrl}/weather/:city`,
    ]);
  });
});
