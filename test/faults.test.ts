/**
 * Faults at the process level, against `facilitator serve` as a child process and real anvil
 * nodes: the process killed with SIGKILL mid-settle (the journal picks the settlement back up),
 * the chain going away and coming back under load, and the same payment settled ten times at once.
 * Every loop here is bounded in count and time; every child is killed and awaited at the end.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createPublicClient, createTestClient, type Hex, http } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { tokenBalance } from "./helpers/chain.js";

const BIN = fileURLToPath(new URL("../bin/facilitator.js", import.meta.url));
/** signSampleRequest's default: 0.01 USDC. */
const AMOUNT = 10_000n;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Processes and files

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
}

const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** SIGKILL, then wait (at most 5 s) until the process is gone. */
async function kill9(child: ChildProcess): Promise<void> {
  if (!hasExited(child)) {
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await Promise.race([gone, sleep(5_000)]);
  }
  children.delete(child);
}

/** Starts `facilitator serve --port 0 ...` and resolves with the URL from its "listening" line. */
function serve(args: readonly string[]): Promise<Served> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("FACILITATOR_")),
  );
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args], {
    env: { ...env, FORCE_COLOR: "0" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.add(child);
  let err = "";
  let url: string | undefined;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void kill9(child);
      reject(new Error(`serve did not start within 15 s: ${err}`));
    }, 15_000);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      // One log line per request: keep the head (the listening line) and a bounded tail.
      err =
        err.length > 20_000 ? `${err.slice(0, 2_000)}…${err.slice(-8_000)}${chunk}` : err + chunk;
      if (url) return;
      const match = /"event":"listening","url":"([^"]+)"/.exec(err);
      if (match?.[1]) {
        url = match[1];
        clearTimeout(timer);
        resolve({ child, url, stderr: () => err });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (!url) reject(new Error(`serve exited (${code ?? signal}) before listening: ${err}`));
    });
  });
}

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-faults-"));
  tempDirs.push(dir);
  return dir;
}

function writeKeyFile(dir: string, keys: readonly Hex[]): string {
  const file = path.join(dir, "facilitator.key");
  writeFileSync(file, `${keys.join("\n")}\n`, { mode: 0o600 });
  return file;
}

/** The hashes of the journal's "send" lines (the first transaction of each settlement). */
function journaledSends(file: string): { key: string; hash: Hex; signer: string }[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as { t: string; key: string; hash: Hex; signer: string })
    .filter((line) => line.t === "send");
}

/** A port the OS says is free right now (listen on 0, read it, close). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error("no port from the OS"))));
    });
  });
}

afterEach(async () => {
  await Promise.all([...children].map(kill9));
});

afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// HTTP

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function post(url: string, route: string, body: unknown, timeoutMs = 15_000) {
  const response = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const rpcOf = (devnet: Devnet) =>
  createPublicClient({ transport: http(devnet.rpcUrl, { retryCount: 0 }) });

const sentBy = (devnet: Devnet, who: Address, blockTag: "latest" | "pending" = "latest") =>
  rpcOf(devnet).getTransactionCount({ address: who, blockTag });

function payerOf(devnet: Devnet, index: number): DevAccount {
  const payer = devnet.payers[index % devnet.payers.length];
  if (!payer) throw new Error(`no payer ${index}`);
  return payer;
}

// ---------------------------------------------------------------------------------------------

describe("kill -9 mid-settle", () => {
  let devnet: Devnet;
  let keyFile: string;
  let dir: string;

  beforeAll(async () => {
    devnet = await startDevnet({ mining: "manual" });
    dir = tempDir();
    keyFile = writeKeyFile(dir, [devnet.facilitator.privateKey]);
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  const mine = () =>
    createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

  /**
   * Starts a settle on a serve process, waits until its transaction is in the mempool, kills the
   * process with SIGKILL and returns the journaled hash.
   */
  async function killMidSettle(journal: string, payer: DevAccount) {
    const facilitator = devnet.facilitator.address;
    const before = {
      sent: await sentBy(devnet, facilitator),
      payee: await tokenBalance(devnet, devnet.payee.address),
    };
    const first = await serve([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      journal,
      "--confirm-timeout",
      "30",
    ]);
    const request = await signSampleRequest(devnet, { payer });
    const inFlight = post(first.url, "/settle", request, 40_000).then(
      (answer) => ({ answered: answer }),
      (error: unknown) => ({ error }),
    );

    let inMempool = false;
    for (let i = 0; i < 200 && !inMempool; i++) {
      const [pending, latest] = await Promise.all([
        sentBy(devnet, facilitator, "pending"),
        sentBy(devnet, facilitator, "latest"),
      ]);
      inMempool = pending > latest;
      if (!inMempool) await sleep(50);
    }
    expect(inMempool, "the settlement transaction reached the mempool").toBe(true);

    await kill9(first.child);
    expect(first.child.signalCode).toBe("SIGKILL");
    // The client never got an answer: the connection died with the process.
    expect(await inFlight).toHaveProperty("error");

    const sends = journaledSends(journal);
    expect(sends).toHaveLength(1);
    const hash = sends[0]?.hash as Hex;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    // The journaled transaction is the one waiting in the node's mempool.
    const tx = await rpcOf(devnet).getTransaction({ hash });
    expect(tx.from.toLowerCase()).toBe(facilitator.toLowerCase());
    expect(tx.blockNumber).toBeNull();
    expect(await sentBy(devnet, facilitator, "pending")).toBe(before.sent + 1);
    return { request, hash, before };
  }

  test("a restarted process settles the same payment with the journaled transaction", async () => {
    const journal = path.join(dir, "journal-mined.jsonl");
    const { request, hash, before } = await killMidSettle(journal, payerOf(devnet, 0));

    const second = await serve([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      journal,
      "--confirm-timeout",
      "10",
    ]);
    await mine();
    const retried = await post(second.url, "/settle", request);
    expect(retried).toEqual({ status: 200, body: { success: true, transactionHash: hash } });

    const receipt = await rpcOf(devnet).getTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before.payee + AMOUNT);
    expect(await sentBy(devnet, devnet.facilitator.address)).toBe(before.sent + 1);
    expect(await sentBy(devnet, devnet.facilitator.address, "pending")).toBe(before.sent + 1);
    expect(journaledSends(journal)).toHaveLength(1);

    const third = await post(second.url, "/settle", request);
    expect(third.status).toBe(400);
    expect(third.body).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(await sentBy(devnet, devnet.facilitator.address, "pending")).toBe(before.sent + 1);
  }, 45_000);

  test("a retry before the block is mined answers settlement_pending with the same hash", async () => {
    const journal = path.join(dir, "journal-pending.jsonl");
    const { request, hash, before } = await killMidSettle(journal, payerOf(devnet, 1));

    const second = await serve([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      journal,
      "--confirm-timeout",
      "2",
    ]);
    const pending = await post(second.url, "/settle", request);
    expect(pending.status).toBe(500);
    expect(pending.body).toMatchObject({
      success: false,
      error: "settlement_pending",
      transactionHash: hash,
    });
    // Nothing new was sent: still one transaction, still in the mempool.
    expect(await sentBy(devnet, devnet.facilitator.address, "pending")).toBe(before.sent + 1);
    expect(await sentBy(devnet, devnet.facilitator.address)).toBe(before.sent);
    expect(journaledSends(journal)).toHaveLength(1);

    await mine();
    const settled = await post(second.url, "/settle", request);
    expect(settled).toEqual({ status: 200, body: { success: true, transactionHash: hash } });
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before.payee + AMOUNT);
    expect(await sentBy(devnet, devnet.facilitator.address)).toBe(before.sent + 1);
    const third = await post(second.url, "/settle", request);
    expect(third.status).toBe(400);
    expect(third.body).toMatchObject({ error: "nonce_already_used" });
  }, 45_000);

  test("a transaction the node lost is broadcast again from the journal, same bytes", async () => {
    const journal = path.join(dir, "journal-lost.jsonl");
    const { request, hash, before } = await killMidSettle(journal, payerOf(devnet, 2));
    const facilitator = devnet.facilitator.address;
    await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).dropTransaction({
      hash,
    });
    expect(await sentBy(devnet, facilitator, "pending")).toBe(before.sent);

    const second = await serve([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      journal,
      "--confirm-timeout",
      "15",
    ]);
    const retried = post(second.url, "/settle", request, 20_000);
    let back = false;
    for (let i = 0; i < 200 && !back; i++) {
      back = (await sentBy(devnet, facilitator, "pending")) > before.sent;
      if (!back) await sleep(50);
    }
    expect(back, "the journaled transaction is back in the mempool").toBe(true);
    const tx = await rpcOf(devnet).getTransaction({ hash });
    expect(tx.from.toLowerCase()).toBe(facilitator.toLowerCase());
    await mine();

    expect(await retried).toEqual({ status: 200, body: { success: true, transactionHash: hash } });
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before.payee + AMOUNT);
    expect(await sentBy(devnet, facilitator)).toBe(before.sent + 1);
    expect(journaledSends(journal)).toHaveLength(1);
  }, 45_000);
});

// ---------------------------------------------------------------------------------------------

type Phase = "before" | "stopping" | "outage" | "restarting" | "after";

interface Outcome {
  readonly kind: "verify" | "settle";
  readonly started: Phase;
  readonly ended: Phase;
  readonly ms: number;
  readonly status?: number;
  readonly code?: string;
  readonly success?: boolean;
  readonly transactionHash?: string;
  readonly httpError?: string;
}

/** Outcomes of requests that started and ended in `phase`, counted by "kind status code". */
function countsOf(outcomes: readonly Outcome[], phase: Phase | "straddling") {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const straddling = o.started !== o.ended;
    if (phase === "straddling" ? !straddling : straddling || o.started !== phase) continue;
    const label = o.httpError
      ? `${o.kind} http-error`
      : `${o.kind} ${o.status} ${o.success ? "success" : (o.code ?? "?")}`;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

describe("anvil stopped and restarted under load", () => {
  const devnets: Devnet[] = [];

  afterAll(async () => {
    await Promise.all(devnets.map((devnet) => devnet.stop()));
  });

  /** startDevnet on a given port, retried briefly while the old node's port is released. */
  async function devnetOn(port: number): Promise<Devnet> {
    for (let attempt = 1; ; attempt++) {
      try {
        const devnet = await startDevnet({ port });
        devnets.push(devnet);
        return devnet;
      } catch (error) {
        if (attempt >= 10) throw error;
        await sleep(200);
      }
    }
  }

  test("verify answers 503 and settle 500 during the outage; both recover on their own", async () => {
    const port = await freePort();
    const first = await devnetOn(port);
    const dir = tempDir();
    const journal = path.join(dir, "journal.jsonl");
    const served = await serve([
      "--rpc-url",
      first.rpcUrl,
      "--private-key-file",
      writeKeyFile(dir, [first.facilitator.privateKey]),
      "--journal",
      journal,
      "--confirm-timeout",
      "8",
      // Settles to the devnet's one payee for as long as the load runs: no rate per payee.
      "--rate-per-payer",
      "0",
    ]);

    let phase: Phase = "before";
    let stop = false;
    const outcomes: Outcome[] = [];
    const loadDeadline = Date.now() + 30_000;
    const REQUEST_LIMIT_MS = 12_000;

    const worker = async (w: number) => {
      for (let k = 0; k < 5_000 && !stop && Date.now() < loadDeadline; k++) {
        // Every fourth request of workers 0 and 1 is a settle; the rest verify.
        const kind = w < 2 && k % 4 === 3 ? "settle" : "verify";
        // Same chain id and token address on both chains, so a request signed now fits either.
        const request = await signSampleRequest(first, { payer: payerOf(first, w) });
        const body = kind === "settle" ? { ...request, waitUntil: "confirmed" } : request;
        const started = phase;
        const t0 = performance.now();
        let outcome: Omit<Outcome, "kind" | "started" | "ended" | "ms">;
        try {
          const { status, body: answer } = await post(
            served.url,
            `/${kind}`,
            body,
            REQUEST_LIMIT_MS,
          );
          outcome = {
            status,
            success: answer.success === true,
            ...(typeof answer.error === "string" ? { code: answer.error } : {}),
            ...(typeof answer.transactionHash === "string"
              ? { transactionHash: answer.transactionHash }
              : {}),
          };
        } catch (error) {
          outcome = { httpError: error instanceof Error ? error.message : String(error) };
        }
        outcomes.push({ kind, started, ended: phase, ms: performance.now() - t0, ...outcome });
        await sleep(5);
      }
    };
    const workers = Promise.all([0, 1, 2, 3].map(worker));
    const inPhase = (p: Phase) => outcomes.filter((o) => o.started === p && o.ended === p);

    try {
      await sleep(3_000);
      phase = "stopping";
      await first.stop();
      phase = "outage";
      await sleep(1_500);
      const health = await fetch(`${served.url}/health`, { signal: AbortSignal.timeout(8_000) });
      expect(health.status).toBe(503);
      expect(await health.json()).toMatchObject({ status: "degraded" });
      await sleep(1_500);
      expect(hasExited(served.child), "serve stays up through the outage").toBe(false);

      phase = "restarting";
      const second = await devnetOn(port);
      expect(second.rpcUrl).toBe(first.rpcUrl);
      expect(second.token.address).toBe(first.token.address);
      phase = "after";
      // Until the recovered chain has taken settles and verifies, within 10 s.
      for (let i = 0; i < 100; i++) {
        const after = inPhase("after");
        const settled = after.filter((o) => o.kind === "settle" && o.success).length;
        const verified = after.filter((o) => o.kind === "verify" && o.success).length;
        if (i >= 20 && settled >= 3 && verified >= 20) break;
        await sleep(100);
      }
    } finally {
      stop = true;
      await workers;
    }

    const phases = ["before", "stopping", "outage", "restarting", "after", "straddling"] as const;
    const report = Object.fromEntries(phases.map((p) => [p, countsOf(outcomes, p)]));
    const slowest = Object.fromEntries(
      phases
        .slice(0, 5)
        .map((p) => [p, Math.round(Math.max(0, ...inPhase(p as Phase).map((o) => o.ms)))]),
    );
    console.log(
      `faults: outcomes per phase ${JSON.stringify(report)}; slowest per phase (ms) ${JSON.stringify(slowest)}`,
    );

    // No request failed at the HTTP level, in any phase.
    expect(outcomes.filter((o) => o.httpError)).toEqual([]);

    // Before: the old chain took settles, so the facilitator's nonce there was above 0.
    const before = inPhase("before");
    expect(before.filter((o) => o.kind === "verify" && o.success).length).toBeGreaterThan(0);
    expect(before.filter((o) => o.kind === "settle" && o.success).length).toBeGreaterThan(0);
    expect(before.filter((o) => !o.success)).toEqual([]);

    // Outage: nothing succeeded; verify 503 and settle 500 chain_unavailable, and quickly.
    const outage = inPhase("outage");
    expect(outage.filter((o) => o.kind === "verify").length).toBeGreaterThan(0);
    expect(outage.filter((o) => o.kind === "settle").length).toBeGreaterThan(0);
    expect(outage.filter((o) => (o.status ?? 0) < 300)).toEqual([]);
    for (const o of outage) {
      expect(o).toMatchObject({
        status: o.kind === "verify" ? 503 : 500,
        code: "chain_unavailable",
      });
      expect(o.ms).toBeLessThan(5_000);
    }

    // After: everything succeeds again, settles confirmed on the new chain (fresh nonces).
    const after = inPhase("after");
    const settledAfter = after.filter((o) => o.kind === "settle" && o.success);
    expect(settledAfter.length).toBeGreaterThan(0);
    expect(after.filter((o) => o.kind === "verify" && o.success).length).toBeGreaterThan(0);
    expect(after.filter((o) => !o.success)).toEqual([]);

    const second = devnets[1] as Devnet;
    const newChain = rpcOf(second);
    for (const o of settledAfter) {
      const receipt = await newChain.getTransactionReceipt({ hash: o.transactionHash as Hex });
      expect(receipt.status).toBe("success");
    }
    // Every settle answered with success since the restart landed on the new chain, once.
    const landedOnNewChain = outcomes.filter(
      (o) => o.kind === "settle" && o.success && (o.ended === "restarting" || o.ended === "after"),
    ).length;
    expect(await tokenBalance(second, second.payee.address)).toBe(
      BigInt(landedOnNewChain) * AMOUNT,
    );
    const facilitator = second.facilitator.address;
    expect(await sentBy(second, facilitator, "pending")).toBe(await sentBy(second, facilitator));

    const health = await fetch(`${served.url}/health`, { signal: AbortSignal.timeout(8_000) });
    expect(health.status).toBe(200);
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------

describe("concurrent duplicate settles over HTTP", () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startDevnet();
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  test("ten simultaneous settles of one payment: one success, one transaction", async () => {
    const dir = tempDir();
    const served = await serve([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      writeKeyFile(dir, [devnet.facilitator.privateKey]),
      "--journal",
      path.join(dir, "journal.jsonl"),
      "--confirm-timeout",
      "10",
    ]);
    const facilitator = devnet.facilitator.address;
    const [payeeBefore, sentBefore] = await Promise.all([
      tokenBalance(devnet, devnet.payee.address),
      sentBy(devnet, facilitator),
    ]);
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 2) });

    const answers: Answer[] = await Promise.all(
      Array.from({ length: 10 }, () => post(served.url, "/settle", request)),
    );
    const counts: Record<string, number> = {};
    for (const a of answers) {
      const label = `${a.status} ${a.body.success === true ? "success" : String(a.body.error)}`;
      counts[label] = (counts[label] ?? 0) + 1;
    }
    console.log(`faults: ten duplicate settles: ${JSON.stringify(counts)}`);

    const successes = answers.filter((a) => a.body.success === true);
    expect(successes).toHaveLength(1);
    expect(successes[0]?.status).toBe(200);
    for (const a of answers.filter((a) => a.body.success !== true)) {
      expect(["409 settlement_in_progress", "400 nonce_already_used"]).toContain(
        `${a.status} ${String(a.body.error)}`,
      );
    }
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + AMOUNT);
    expect(await sentBy(devnet, facilitator)).toBe(sentBefore + 1);

    const again = await post(served.url, "/settle", request);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: "nonce_already_used" });
    expect(await sentBy(devnet, facilitator, "pending")).toBe(sentBefore + 1);
  }, 30_000);
});
