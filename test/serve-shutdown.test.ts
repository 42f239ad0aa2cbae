/**
 * Issue 40, "overload is refused early and recovers": SIGTERM with hundreds of requests in flight.
 * The real `facilitator serve` (the built bundle) on a real anvil that mines only when told, so
 * every settle broadcast waits for a receipt that does not come (a stalled chain, or a lane far
 * behind). 300 requests at once, half verifies and half settles, then SIGTERM: serve stops within
 * its --shutdown-timeout, every request that reached it is answered (a verify's answer, a settle's
 * success or settlement_pending with its hash, or a refusal with Retry-After), none is cut, and
 * every transaction it broadcast is in its journal for the next start to follow.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createPublicClient, createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Setting } from "../src/cli/settings/setting-rows.js";
import { SETTINGS } from "../src/cli/settings/settings.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { type Answer, send, startServe } from "./helpers/serve.js";

const REQUESTS = 300;
const SHUTDOWN_SECONDS = 4;
/** Process exit, the worker's end and a busy machine's scheduling, beyond the timeout. */
const MARGIN_MS = 2_500;

let devnet: Devnet;
let dir: string;
let keyFile: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-shutdown-")),
  ]);
  keyFile = path.join(dir, "facilitator.key");
  writeFileSync(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

/** Every transaction hash the journal file holds. */
function journaled(journal: string): Set<string> {
  const text = readFileSync(journal, "utf8");
  return new Set([...text.matchAll(/0x[0-9a-f]{64}/g)].map((m) => m[0]));
}

describe("SIGTERM with hundreds of requests in flight", () => {
  it("the shutdown timeout is a setting whose default is at most 15 s", () => {
    const row = Object.values(SETTINGS as Record<string, Setting>).find((r) =>
      r.flag?.startsWith("--shutdown-timeout "),
    );
    const ms = row?.kind === "value" ? Number(row.default?.({})) : Number.NaN;
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(15_000);
  });

  it(`serve stops within --shutdown-timeout ${SHUTDOWN_SECONDS}, answering or refusing each of ${REQUESTS}`, async () => {
    const journal = path.join(dir, "journal.jsonl");
    const bodies = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, i) => ({
        path: i % 2 === 0 ? "/settle" : "/verify",
        body: JSON.stringify(
          await signSampleRequest(devnet, {
            payer: devnet.payers[i % devnet.payers.length] as (typeof devnet.payers)[number],
            dialect: i % 4 < 2 ? "reference" : "x402",
          }),
        ),
      })),
    );
    const serving = await startServe(
      ["--journal", journal, "--shutdown-timeout", String(SHUTDOWN_SECONDS)],
      {
        FACILITATOR_RPC_URL: devnet.rpcUrl,
        FACILITATOR_PRIVATE_KEY_FILE: keyFile,
      },
    );
    let answers: Answer[] = [];
    try {
      const pending = bodies.map((b) => send(serving.url, { path: b.path, body: b.body }));
      // Settles are being broadcast and wait for receipts the chain does not mine.
      const sends = () => (readFileSync(journal, "utf8").match(/"t":"send"/g) ?? []).length;
      expect(await until(() => sends() >= 10, 20_000)).toBe(true);
      const started = Date.now();
      serving.child.kill("SIGTERM");
      const code = await Promise.race([
        serving.exited,
        new Promise<"still running">((r) => setTimeout(() => r("still running"), 90_000)),
      ]);
      const took = Date.now() - started;
      answers = await Promise.all(pending);
      expect(code).toBe(0);
      expect(took).toBeLessThan(SHUTDOWN_SECONDS * 1000 + MARGIN_MS);
    } finally {
      serving.child.kill("SIGKILL");
    }

    // Every request is answered, or its connection was refused before serve accepted it.
    const cut = answers
      .map((a, i) => ({ i, path: bodies[i]?.path, ...a }))
      .filter((a) => a.status === undefined && a.error !== "ECONNREFUSED");
    expect(cut).toEqual([]);

    // Each answer is one a client can act on: a verdict, a settlement (or its pending state,
    // to retry), or a refusal saying when to come back.
    const hashes = journaled(journal);
    const kinds = new Map<string, number>();
    answers.forEach((a, i) => {
      if (a.status === undefined) return;
      const body = JSON.parse(a.body ?? "{}") as Record<string, unknown>;
      const op = bodies[i]?.path === "/settle" ? "settle" : "verify";
      const ok = body.success === true || body.isValid === true;
      const kind = `${op} ${a.status} ${ok ? "ok" : String(body.error ?? body.errorReason)}`;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      if (a.status === 503) {
        expect(a.retryAfter, kind).toBeDefined();
        expect(a.connection, kind).toBe("close");
      }
      // A settle answered with a hash: the journal holds it.
      const hash = (body.transactionHash ?? body.transaction) as string | undefined;
      if (op === "settle" && hash) expect(hashes.has(hash.toLowerCase()), hash).toBe(true);
    });
    const allowed = [
      "verify 200 ok",
      "verify 503 overloaded",
      "settle 200 ok",
      // settlement_pending: 500 in the reference dialect, 200 with errorReason in x402's.
      "settle 500 settlement_pending",
      "settle 200 settlement_pending",
      "settle 503 overloaded",
    ];
    expect(
      [...kinds.keys()].filter((k) => !allowed.includes(k)),
      JSON.stringify([...kinds]),
    ).toEqual([]);
    // The chain mined nothing: settles in flight at the end were answered pending by the stop.
    const pendingAnswers =
      (kinds.get("settle 500 settlement_pending") ?? 0) +
      (kinds.get("settle 200 settlement_pending") ?? 0);
    expect(pendingAnswers).toBeGreaterThan(0);

    // Never a broadcast left unfollowed: whatever serve sent lands, and is in its journal.
    const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    await test.mine({ blocks: 1 });
    const chain = createPublicClient({ transport: http(devnet.rpcUrl) });
    const block = await chain.getBlock({ includeTransactions: true });
    const ours = block.transactions.filter(
      (tx) => tx.from.toLowerCase() === devnet.facilitator.address.toLowerCase(),
    );
    expect(ours.length).toBeGreaterThan(0);
    const missing = ours.map((tx) => tx.hash as Hex).filter((h) => !hashes.has(h.toLowerCase()));
    expect(missing).toEqual([]);
  }, 120_000);
});
