/**
 * GET /settlements and `facilitator status`, asked by a transaction: the journal file and
 * PostgreSQL give the same answer for an EVM hash in any case, and keep a Solana signature's case
 * as its own; anything else is 400 invalid_request, never a 500 (for the CLI, a usage error, not
 * "not found"), and the store away is 503 store_unavailable; `serve` beyond loopback without an
 * API key keeps /settlements off, since its answers name hosts and processes. Real anvil, real
 * PostgreSQL, real sockets, the built CLI.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { JournalEntry, SettlementStore } from "../src/core/store.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { bytesToBase58 } from "../src/protocol/base58.js";
import { handleSettle } from "../src/protocol/respond.js";
import { transactionHash } from "../src/protocol/transaction-hash.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { runCli } from "./helpers/run-cli.js";
import { startServe } from "./helpers/serve.js";

interface Served {
  readonly name: string;
  readonly store: SettlementStore;
  readonly facilitator: Facilitator;
  readonly server: RunningServer;
  /** The transaction of the payment settled through this store. */
  hash: string;
}

let devnet: Devnet;
let postgres: Postgres;
let storeUrl: string;
let dir: string;
const served: Served[] = [];
/** A Solana settlement's signature, written down in both stores. */
const signature = bytesToBase58(randomBytes(64));

/** Writes `entry` down in `store` as a settle would: claimed, sent, its state. */
async function copyInto(store: SettlementStore, entry: JournalEntry): Promise<void> {
  const { key, network, signer, txNonce, expect: transfer } = entry;
  expect(await store.claim(key)).toBe(true);
  const [first, ...later] = entry.hashes;
  await store.recordSend({ key, network, signer, txNonce, expect: transfer }, first ?? "0x", "0x");
  for (const hash of later) await store.recordReplace(key, hash, "0x");
  await store.recordState(key, entry.state);
  await store.release(key);
}

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-settlements-"));
  storeUrl = await postgres.freshDatabase("lookups");
  const signer = privateKeyToAccount(devnet.facilitator.privateKey);
  const stores: [string, SettlementStore][] = [
    ["journal file", new Journal(path.join(dir, "journal.jsonl"))],
    ["PostgreSQL", await PostgresStore.open(storeUrl, { signers: [signer.address] })],
  ];
  for (const [i, [name, store]] of stores.entries()) {
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      useDefaultRpcs: false,
      signer,
      journal: store,
    });
    const server = await startServer(createHandler(facilitator), { port: 0 });
    const payer = devnet.payers[i];
    if (!payer) throw new Error("no payer");
    const reply = await handleSettle(facilitator, await signSampleRequest(devnet, { payer }));
    expect(reply.body).toMatchObject({ success: true });
    served.push({ name, store, facilitator, server, hash: String(reply.body.transactionHash) });
  }
  // Each store also holds the other's settlement, and one Solana settlement, written down alike.
  const [file, pg] = served as [Served, Served];
  await copyInto(pg.store, (await file.store.findByTransaction(file.hash)) as JournalEntry);
  await copyInto(file.store, (await pg.store.findByTransaction(pg.hash)) as JournalEntry);
  const solana = {
    key: `svm:solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1:${signature}`,
    network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    signer: "0x0000000000000000000000000000000000000001",
    txNonce: 0,
    hashes: [signature],
    raws: [],
    state: "answered",
  } as unknown as JournalEntry;
  for (const { store } of served) await copyInto(store, solana);
}, 90_000);

afterAll(async () => {
  for (const { server, store } of served) {
    await server.close();
    await store.close();
  }
  await postgres?.stop();
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function ask(server: RunningServer, query: string) {
  const response = await fetch(`${server.url}/settlements?${query}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * An answer without who wrote it down, its age and its confirmations: the devnet mines a block
 * every second, so those change between two lookups.
 */
function record({ by: _by, ageSeconds: _age, ...rest }: Record<string, unknown>) {
  const { confirmations: _confirmations, ...chain } = rest.chain as Record<string, unknown>;
  return { ...rest, chain };
}

/** One letter of `text` in the other case, still base58 (the alphabet lacks I, O and l). */
function otherCase(text: string): string {
  for (let i = text.length - 1; i >= 0; i--) {
    const char = text[i] as string;
    const swapped = char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase();
    if (swapped !== char && !"IOl".includes(swapped)) {
      return text.slice(0, i) + swapped + text.slice(i + 1);
    }
  }
  throw new Error(`no letter to swap in ${text}`);
}

describe("GET /settlements?transaction=", () => {
  test("an EVM hash in any case: found, the same answer from the journal file and PostgreSQL", async () => {
    for (const { hash } of served) {
      const spellings = [
        hash,
        `0x${hash.slice(2).toUpperCase()}`,
        hash.toUpperCase(),
        `0x${[...hash.slice(2)].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join("")}`,
      ];
      const answers: Record<string, unknown>[] = [];
      for (const { name, server } of served) {
        for (const spelling of spellings) {
          const { status, body } = await ask(server, `transaction=${spelling}`);
          expect(status, `${name}: ${spelling}: ${JSON.stringify(body)}`).toBe(200);
          expect(body).toMatchObject({ found: true, state: "answered", transactions: [hash] });
          answers.push(record(body));
        }
      }
      for (const answer of answers) expect(answer, JSON.stringify(answers)).toEqual(answers[0]);
    }
  });

  test("a Solana signature is case-sensitive: found as it is, not in another case, on both stores", async () => {
    const other = otherCase(signature);
    expect(transactionHash(other)).toBe(other);
    const found: Record<string, unknown>[] = [];
    for (const { name, server } of served) {
      const exact = await ask(server, `transaction=${signature}`);
      expect(exact.status, name).toBe(200);
      expect(exact.body).toMatchObject({ found: true, transactions: [signature] });
      found.push(record(exact.body));
      const wrong = await ask(server, `transaction=${other}`);
      expect(wrong.status, `${name}: ${other}`).toBe(404);
      expect(wrong.body).toMatchObject({ found: false });
    }
    expect(found[1]).toEqual(found[0]);
  });

  test("what is neither an EVM hash nor a Solana signature is 400 invalid_request, never a 500", async () => {
    const transactions = [
      "%00",
      `0x${"ab".repeat(31)}%00%00`,
      "0x1234",
      `0x${"zz".repeat(32)}`,
      `0x${"a".repeat(63)}`,
      `0x${"a".repeat(65)}`,
      `${signature.slice(0, 40)}`,
      `${signature.slice(0, -1)}0`,
      "%27%20OR%201%3D1%20--",
      "%E2%82%AC".repeat(30),
    ];
    for (const { name, server } of served) {
      for (const transaction of transactions) {
        const { status, body } = await ask(server, `transaction=${transaction}`);
        expect(status, `${name}: ${transaction}`).toBe(400);
        expect(body).toMatchObject({ success: false, error: "invalid_request" });
        expect(String(body.message)).toMatch(/^not a transaction hash: .*0x and 64 hex digits/);
      }
      for (const id of ["%00", "short", `${"a".repeat(20)}%00`]) {
        const { status, body } = await ask(server, `id=${id}`);
        expect(status, `${name}: id ${id}`).toBe(400);
        expect(body).toMatchObject({ error: "invalid_request" });
        expect(String(body.message)).toMatch(/^not a payment-identifier: /);
      }
    }
  });
});

describe("facilitator status --transaction", () => {
  test("any case of an EVM hash is found on both stores, a miss names the journal or the store; junk is a usage error, not 'not found'", async () => {
    const [file, pg] = served as [Served, Served];
    const stores = [
      ["--journal", path.join(dir, "journal.jsonl")],
      ["--store", storeUrl],
    ];
    for (const where of stores) {
      for (const { hash } of [file, pg]) {
        const run = await runCli([
          "status",
          ...where,
          "--rpc-url",
          devnet.rpcUrl,
          "--transaction",
          hash.toUpperCase(),
        ]);
        expect(run.code, `${where[0]} ${hash}: ${run.stderr}`).toBe(0);
        expect(JSON.parse(run.stdout)).toMatchObject({ found: true, transactions: [hash] });
      }
      // A miss names what was asked: the journal file, or the store.
      const miss = await runCli(["status", ...where, "--transaction", `0x${"ab".repeat(32)}`]);
      expect(miss.code, `${where[0]}: ${miss.stderr}`).toBe(1);
      expect(JSON.parse(miss.stdout).detail).toMatch(
        where[0] === "--store"
          ? /^the store postgres:\/\/\S+ holds no settlement/
          : /^the journal \/\S+ holds no settlement/,
      );
      for (const junk of ["0x1234", `0x${"zz".repeat(32)}`, "' OR 1=1 --"]) {
        const run = await runCli(["status", ...where, "--transaction", junk]);
        expect(run.code, `${where[0]} ${junk}`).toBe(2);
        expect(run.stderr).toContain("not a transaction hash");
      }
    }
  }, 60_000);
});

describe("serve and GET /settlements", () => {
  test("beyond loopback without an API key it is off, saying why; an API key or loopback turns it on", async () => {
    const journal = (name: string) => ["--journal", path.join(dir, `${name}.jsonl`)];
    const rpc = ["--rpc-url", devnet.rpcUrl];
    const [open, keyed, local] = await Promise.all([
      startServe([...rpc, "--host", "0.0.0.0", ...journal("open-any")]),
      startServe([...rpc, "--host", "0.0.0.0", ...journal("keyed-any")], {
        FACILITATOR_API_KEY: "test-api-key",
      }),
      startServe([...rpc, ...journal("loopback")]),
    ]);
    const query = `/settlements?transaction=0x${"0".repeat(64)}`;
    // Bound to 0.0.0.0, serve names that address in its URL; ask through loopback.
    const get = async (url: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${url.replace("0.0.0.0", "127.0.0.1")}${query}`, { headers });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    try {
      const off = await get(open.url);
      expect(off.status).toBe(404);
      expect(off.body).toMatchObject({ success: false, error: "not_found" });
      expect(String(off.body.message)).toMatch(/off.*without an API key.*--api-key-file/);
      expect((await get(keyed.url)).status).toBe(401);
      const authorized = await get(keyed.url, { authorization: "Bearer test-api-key" });
      expect(authorized).toMatchObject({ status: 404, body: { found: false } });
      expect(await get(local.url)).toMatchObject({ status: 404, body: { found: false } });
      const junk = await fetch(`${local.url}/settlements?transaction=%00`);
      expect(junk.status).toBe(400);
      expect(await junk.json()).toMatchObject({ error: "invalid_request" });
    } finally {
      for (const serving of [open, keyed, local]) serving.child.kill("SIGKILL");
    }
  }, 60_000);
});

describe("the store away", () => {
  // Last in this file: it stops the PostgreSQL server the stores above use, then starts it again.
  test("GET /settlements answers 503 store_unavailable, not a 500", async () => {
    const pg = served[1] as Served;
    await postgres.halt("fast");
    try {
      const { status, body } = await ask(pg.server, `transaction=${pg.hash}`);
      expect(status).toBe(503);
      expect(body).toMatchObject({ success: false, error: "store_unavailable" });
    } finally {
      await postgres.resume();
    }
    expect((await ask(pg.server, `transaction=${pg.hash}`)).status).toBe(200);
  }, 30_000);
});
