/**
 * The bazaar catalogue as each store keeps it (bazaar/catalogue.ts; store/journal-catalogue.ts,
 * store/postgres-catalogue.ts): an entry per resource (and MCP tool) updated by each payment,
 * bounded per payee, per payer and in total (the entries updated longest ago make room), filtered
 * and searched alike by both, kept across a restart; in PostgreSQL, shared by replicas, two of
 * which adding one resource at once make one entry. A real PostgreSQL.
 */
import { mkdtemp, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REFRESH_MS } from "../src/bazaar/catalogue.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { catalogueStores, entry, PAYEE, PAYER, resources, WIDE } from "./helpers/catalogue.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

let postgres: Postgres;
let dir: string;
beforeAll(async () => {
  postgres = await startPostgres();
  dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-catalogue-"));
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const kinds = catalogueStores(() => ({ postgres, dir }));
/** Journal files of this file's own, in `dir`. */
let files = 0;

describe.each(kinds)("$name", (kind) => {
  test("a payment adds its resource; the next updates it: requirements merged, who added it kept", async () => {
    const { store, restart, lines } = await kind.make();
    const catalogue = store.catalogue;
    if (!catalogue) throw new Error("the store keeps no catalogue");
    expect(await catalogue.put(entry("https://a.example/x"), WIDE)).toEqual({ added: true });
    const again = entry("https://a.example/x", {
      network: "eip155:8453",
      payer: "0xOther",
      description: "new words",
    });
    expect(await catalogue.put(again, WIDE)).toEqual({ added: false });
    const [kept] = (await catalogue.list({}, 10, 0)).items;
    expect(kept?.accepts.map((a) => a.network)).toEqual(["eip155:8453", "eip155:84532"]);
    expect(kept?.description).toBe("new words");
    expect([kept?.payer, kept?.payTo]).toEqual([PAYER, PAYEE]);
    expect(kept?.lastUpdated).toBe(again.lastUpdated);

    // The same payment again within a minute: nothing is written.
    const before = await lines?.();
    expect(await catalogue.put({ ...again, lastUpdated: again.lastUpdated + 1 }, WIDE)).toEqual({
      added: false,
    });
    expect(await lines?.()).toBe(before);
    expect((await catalogue.list({}, 10, 0)).items[0]?.lastUpdated).toBe(again.lastUpdated);
    // ...and after a minute, its time is.
    await catalogue.put({ ...again, lastUpdated: again.lastUpdated + REFRESH_MS }, WIDE);
    expect((await catalogue.list({}, 10, 0)).items[0]?.lastUpdated).toBe(
      again.lastUpdated + REFRESH_MS,
    );

    // MCP tools on one URL are entries of their own.
    await catalogue.put(entry("https://a.example/mcp", { type: "mcp", toolName: "one" }), WIDE);
    await catalogue.put(entry("https://a.example/mcp", { type: "mcp", toolName: "two" }), WIDE);
    expect((await catalogue.list({ type: "mcp" }, 10, 0)).total).toBe(2);

    const reopened = await restart();
    try {
      expect(await resources(reopened)).toEqual([
        "https://a.example/x",
        "https://a.example/mcp",
        "https://a.example/mcp",
      ]);
      expect((await reopened.catalogue?.list({}, 10, 0))?.items[0]?.accepts).toHaveLength(2);
    } finally {
      await reopened.close();
    }
  });

  test("a journal compacted at start-up keeps the catalogue (its lines rewritten, the history gone)", async () => {
    if (kind.name !== "journal file") return;
    const file = path.join(dir, `compacted-${++files}.jsonl`);
    const journal = new Journal(file);
    const first = entry("https://c.example/x");
    for (let i = 0; i < 10; i++) {
      await journal.catalogue.put(
        { ...first, lastUpdated: first.lastUpdated + i * REFRESH_MS },
        WIDE,
      );
    }
    journal.close();
    expect((await readFile(file, "utf8")).split("\n").filter(Boolean)).toHaveLength(10);
    const compacted = new Journal(file, { compactAfterLines: 5 });
    try {
      expect((await readFile(file, "utf8")).split("\n").filter(Boolean)).toHaveLength(1);
      const [kept] = (await compacted.catalogue.list({}, 10, 0)).items;
      expect(kept?.lastUpdated).toBe(first.lastUpdated + 9 * REFRESH_MS);
    } finally {
      compacted.close();
    }
  });

  test("bounded per payee, per payer and in total; one payer cannot fill it", async () => {
    const { store } = await kind.make();
    const catalogue = store.catalogue;
    if (!catalogue) throw new Error("the store keeps no catalogue");
    try {
      const bounds = { total: 4, perPayee: 2, perPayer: 3 };
      expect(
        await catalogue.put(entry("https://p.example/1", { payTo: "0xAAA", payer: "0x1" }), bounds),
      ).toEqual({ added: true });
      expect(
        await catalogue.put(entry("https://p.example/2", { payTo: "0xaaa", payer: "0x2" }), bounds),
      ).toEqual({ added: true });
      const third = await catalogue.put(
        entry("https://p.example/3", { payTo: "0xAaA", payer: "0x3" }),
        bounds,
      );
      expect(third).toEqual({ refused: expect.stringContaining("the most one payee may add") });
      // Updating what is there is never refused.
      expect(
        await catalogue.put(entry("https://p.example/1", { payTo: "0xAAA", payer: "0x9" }), bounds),
      ).toEqual({ added: false });

      // One payer, paying payees of its own making: three entries, then no more.
      for (let i = 0; i < 3; i++) {
        const done = await catalogue.put(
          entry(`https://spam.example/${i}`, { payTo: `0xS${i}`, payer: "0xSPAM" }),
          bounds,
        );
        expect(done).toEqual({ added: true });
      }
      const fourth = await catalogue.put(
        entry("https://spam.example/3", { payTo: "0xS3", payer: "0xspam" }),
        bounds,
      );
      expect(fourth).toEqual({ refused: expect.stringContaining("the most one payer may") });

      // Full (4): a new entry makes room by dropping the one updated longest ago.
      expect((await catalogue.list({}, 10, 0)).total).toBe(4);
      expect(
        await catalogue.put(entry("https://q.example/new", { payTo: "0xB", payer: "0x4" }), bounds),
      ).toEqual({ added: true });
      const left = await resources(store);
      expect(left).toHaveLength(4);
      expect(left).toContain("https://q.example/new");
      expect(left).not.toContain("https://p.example/2");
    } finally {
      await store.close();
    }
  });

  test("filters and search answer alike in both stores", async () => {
    const { store } = await kind.make();
    const catalogue = store.catalogue;
    if (!catalogue) throw new Error("the store keeps no catalogue");
    try {
      await catalogue.put(
        entry("https://w.example/weather", {
          description: "Weather forecast by city",
          tags: ["weather"],
          others: ["payment-identifier"],
        }),
        WIDE,
      );
      await catalogue.put(
        entry("https://s.example/search", {
          description: "Search the web",
          network: "eip155:8453",
          payTo: "0xB0B",
        }),
        WIDE,
      );
      await catalogue.put(
        entry("https://m.example/mcp", {
          type: "mcp",
          toolName: "forecast",
          description: "City weather tool",
          scheme: "upto",
        }),
        WIDE,
      );

      expect(await resources(store)).toEqual([
        "https://m.example/mcp",
        "https://s.example/search",
        "https://w.example/weather",
      ]);
      expect(await resources(store, { type: "mcp" })).toEqual(["https://m.example/mcp"]);
      expect(await resources(store, { payTo: "0xb0b" })).toEqual(["https://s.example/search"]);
      expect(await resources(store, { network: "eip155:8453" })).toEqual([
        "https://s.example/search",
      ]);
      expect(await resources(store, { scheme: "upto" })).toEqual(["https://m.example/mcp"]);
      expect(await resources(store, { extension: "payment-identifier" })).toEqual([
        "https://w.example/weather",
      ]);
      expect(await resources(store, { extension: "bazaar" })).toHaveLength(3);
      expect(await resources(store, { network: "eip155:999999999" })).toEqual([]);
      expect(await resources(store, {}, 1, 1)).toEqual(["https://s.example/search"]);
      expect((await catalogue.list({ network: "eip155:999999999" }, 10, 0)).total).toBe(0);

      // Most words first, then newest; `more` when another page follows.
      const found = await catalogue.search({}, ["weather", "city"], 10, 0);
      expect(found.items.map((e) => e.resource)).toEqual([
        "https://m.example/mcp",
        "https://w.example/weather",
      ]);
      expect(found.more).toBe(false);
      const page = await catalogue.search({}, ["weather"], 1, 0);
      expect([page.items.length, page.more]).toEqual([1, true]);
      expect(
        (await catalogue.search({ type: "http" }, ["weather"], 10, 0)).items.map((e) => e.resource),
      ).toEqual(["https://w.example/weather"]);
      expect((await catalogue.search({}, ["nothing"], 10, 0)).items).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe("postgres: replicas share one catalogue", () => {
  test("what one replica adds, another lists; two adding one resource at once make one entry; the total holds", async () => {
    const url = await postgres.freshDatabase();
    const a = await PostgresStore.open(url, { signers: [], owner: "replica-a" });
    const b = await PostgresStore.open(url, { signers: [], owner: "replica-b" });
    try {
      await a.catalogue.put(entry("https://r.example/one"), WIDE);
      expect(await resources(b)).toEqual(["https://r.example/one"]);

      const same = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 ? a : b).catalogue.put(entry("https://r.example/race", { payer: `0x${i}` }), WIDE),
        ),
      );
      expect(same.filter((r) => "added" in r && r.added)).toHaveLength(1);

      const bounds = { ...WIDE, total: 5 };
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 ? a : b).catalogue.put(
            entry(`https://r.example/many/${i}`, { payer: `0xM${i}` }),
            bounds,
          ),
        ),
      );
      expect((await a.catalogue.list({}, 100, 0)).total).toBe(5);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("postgres: a payment settled through one replica is listed by another", () => {
  test("two facilitators on one database (the chain's verdicts stubbed)", async () => {
    const url = await postgres.freshDatabase();
    const stores = await Promise.all(
      ["one", "two"].map((owner) => PostgresStore.open(url, { signers: [], owner })),
    );
    try {
      const [one, two] = stores.map((journal) => {
        const facilitator = new Facilitator({ useDefaultRpcs: false, journal });
        facilitator.evm.claims = () => true;
        facilitator.evm.settle = async () => ({
          ok: true,
          payer: PAYER,
          transactionHash: `0x${"ab".repeat(32)}`,
        });
        return facilitator;
      }) as [Facilitator, Facilitator];
      const accepted = {
        scheme: "exact",
        network: "eip155:84532",
        amount: "1",
        asset: "0xA55E7",
        payTo: PAYEE,
      };
      const settle = {
        x402Version: 2,
        paymentPayload: {
          x402Version: 2,
          resource: { url: "https://replicas.example/thing", description: "A thing" },
          accepted,
          payload: {},
          extensions: {
            bazaar: {
              info: { input: { type: "http", method: "GET" } },
              schema: { type: "object" },
            },
          },
        },
        paymentRequirements: accepted,
      };
      const answer = await createHandler(one)({
        method: "POST",
        url: "/settle",
        headers: { "content-type": "application/json" },
        body: Buffer.from(JSON.stringify(settle)),
      });
      expect(
        JSON.parse(Buffer.from(answer.headers["extension-responses"] ?? "", "base64").toString()),
      ).toEqual({
        bazaar: { status: "success" },
      });
      const listed = await createHandler(two)({
        method: "GET",
        url: "/discovery/resources",
        headers: {},
      });
      expect(JSON.parse(listed.body).items.map((i: { resource: string }) => i.resource)).toEqual([
        "https://replicas.example/thing",
      ]);
    } finally {
      for (const store of stores) await store.close();
    }
  });
});
