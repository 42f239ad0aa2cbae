/**
 * Issue 9, the rest of `serve`: the Host-header guard against DNS rebinding when there is no API
 * key, and the restart of a serving worker that died. The worker is killed the way an operator's
 * settings allow: a tiny `--max-heap`, the load limits raised, and 500 concurrent verifies of
 * valid 61 KB payments (one long string in `extra`, inside the free-form bounds). Runs the real
 * `facilitator serve` on real anvil chains; every wait is bounded.
 */

import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { hostOf, trustedHosts } from "../src/http/hosts.js";
import {
  type Answer,
  post,
  type Serving,
  send,
  startServe,
  waitForStderr,
} from "./helpers/serve.js";

let devnet: Devnet;
let dir: string;

/** A process and its descendants, from /proc. */
function processTree(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8")
      .split(" ")
      .filter(Boolean)
      .map(Number),
  );
  return [pid, ...children.flatMap(processTree)];
}

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-resilience-"));
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the Host check (no API key)", () => {
  test("loopback names, the bound host and allowed names pass; other names do not", () => {
    const local = trustedHosts({
      bindHost: "127.0.0.1",
      allowed: ["pay.example", "*.corp.example"],
    });
    for (const ok of [
      undefined,
      "localhost:4020",
      "LOCALHOST",
      "localhost.",
      "app.localhost:4020",
      "127.0.0.1:4020",
      "127.1.2.3",
      "[::1]:4020",
      "pay.example:443",
      "api.corp.example",
    ]) {
      expect(local(ok), String(ok)).toBe(true);
    }
    for (const bad of [
      "evil.example",
      "evil.example:4020",
      "localhost@evil.example",
      "127.0.0.1.evil.example",
      "localhost.evil.example",
      "corp.example",
      "[::2]",
      "10.0.0.1",
      "",
      "a b",
    ]) {
      expect(local(bad), bad).toBe(false);
    }
    // Asked again (verdicts are remembered), and after a flood of distinct names that fills and
    // empties what is remembered: the same verdicts.
    for (let i = 0; i < 600; i++) expect(local(`flood${i}.example`)).toBe(false);
    expect(local(`${"a".repeat(300)}.example`)).toBe(false);
    expect(local(`${"a".repeat(300)}.corp.example`)).toBe(true);
    for (const ok of ["localhost:4020", "pay.example:443", "api.corp.example"]) {
      expect(local(ok), ok).toBe(true);
    }
    for (const bad of ["evil.example", "localhost@evil.example", "corp.example"]) {
      expect(local(bad), bad).toBe(false);
    }
    expect(trustedHosts({ bindHost: "192.168.7.7" })("192.168.7.7:4020")).toBe(true);
    expect(trustedHosts({ bindHost: "::1" })("[::1]")).toBe(true);
    expect(hostOf("127.1")).toBe("127.0.0.1");
  });

  test("bound to every interface, the machine's own names and addresses pass", () => {
    const any = trustedHosts({ bindHost: "0.0.0.0" });
    expect(any(os.hostname())).toBe(true);
    const address = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a?.family === "IPv4")?.address;
    if (address) expect(any(`${address}:4020`)).toBe(true);
    expect(any("evil.example")).toBe(false);
  });

  test("listening beyond loopback without an API key, serve says so; with one, it does not", async () => {
    // Two servers at once, so a journal each: a second serve on one journal refuses to start.
    const journal = (name: string) => ["--journal", path.join(dir, `${name}.jsonl`)];
    const [open, keyed] = await Promise.all([
      startServe(["--rpc-url", devnet.rpcUrl, "--host", "0.0.0.0", ...journal("open-any")]),
      startServe(["--rpc-url", devnet.rpcUrl, "--host", "0.0.0.0", ...journal("keyed-any")], {
        FACILITATOR_API_KEY: "k",
      }),
    ]);
    try {
      expect(await waitForStderr(open, /"event":"warning".*without an API key/, 2_000)).toBe(true);
      expect(await waitForStderr(keyed, /"event":"warning"/, 300)).toBe(false);
    } finally {
      open.child.kill("SIGKILL");
      keyed.child.kill("SIGKILL");
    }
  });

  test("serve without an API key answers 403 untrusted_host; --allowed-host and an API key let it in", async () => {
    const journal = (name: string) => ["--journal", path.join(dir, `${name}.jsonl`)];
    const [open, keyed] = await Promise.all([
      startServe(["--rpc-url", devnet.rpcUrl, "--allowed-host", "pay.example", ...journal("open")]),
      startServe(["--rpc-url", devnet.rpcUrl, ...journal("keyed")], {
        FACILITATOR_API_KEY: "test-api-key",
      }),
    ]);
    try {
      const rebound = await send(open.url, {
        path: "/supported",
        headers: { host: "evil.example" },
      });
      expect(rebound.status).toBe(403);
      const body = JSON.parse(rebound.body ?? "") as Record<string, unknown>;
      expect(body).toMatchObject({ success: false, error: "untrusted_host" });
      expect(String(body.message)).not.toContain("\n");
      const payer = devnet.payers[0];
      if (!payer) throw new Error("no payer");
      const payment = JSON.stringify(await signSampleRequest(devnet, { payer }));
      expect((await post(open.url, payment, { host: "evil.example:4020" })).status).toBe(403);
      expect((await post(open.url, payment, { host: "localhost:4020" })).status).toBe(200);
      expect((await post(open.url, payment, { host: "pay.example" })).status).toBe(200);
      // With an API key the key is the guard: any Host, and the key decides.
      const evil = { host: "evil.example" };
      expect((await send(keyed.url, { path: "/supported", headers: evil })).status).toBe(200);
      expect((await post(keyed.url, payment, evil)).status).toBe(401);
      const authorized = { ...evil, authorization: "Bearer test-api-key" };
      expect((await post(keyed.url, payment, authorized)).status).toBe(200);
    } finally {
      open.child.kill("SIGKILL");
      keyed.child.kill("SIGKILL");
    }
  });
});

/** Valid, signed, with a 60,000-character string in `extra`: one value, inside the bounds. */
async function heavyRequest(chain: Devnet): Promise<string> {
  const payer = chain.payers[4];
  if (!payer) throw new Error("no payer");
  const request = await signSampleRequest(chain, { payer });
  const requirements = request.requirements as Record<string, unknown>;
  const extra = requirements.extra as Record<string, unknown>;
  return JSON.stringify({
    ...request,
    requirements: { ...requirements, extra: { ...extra, note: "x".repeat(60_000) } },
  });
}

/** The operator's setting that lets the test exhaust a worker: a tiny heap, no load limits. */
const FRAGILE = ["--max-heap", "16", "--max-connections", "100000", "--max-inflight-bytes", "1e9"];

const flood = async (serving: Serving, body: string) =>
  Promise.all(Array.from({ length: 500 }, () => post(serving.url, body)));

describe("a serving worker that dies is restarted", () => {
  let stalled: Devnet;
  beforeAll(async () => {
    stalled = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await stalled?.stop();
  });

  test("out of memory: one JSON line, a new worker on the same port, the settle in flight reconciled", async () => {
    const key = path.join(dir, "stalled.key");
    writeFileSync(key, stalled.facilitator.privateKey, { mode: 0o600 });
    const journal = path.join(dir, "restart-journal");
    const serving = await startServe([
      "--rpc-url",
      stalled.rpcUrl,
      "--private-key-file",
      key,
      "--journal",
      journal,
      "--confirm-timeout",
      "20",
      ...FRAGILE,
    ]);
    try {
      // A settle is broadcast and waits for a block that the test does not mine yet.
      const payer = stalled.payers[0];
      if (!payer) throw new Error("no payer");
      const settleBody = JSON.stringify(await signSampleRequest(stalled, { payer }));
      const inFlight = send(serving.url, { path: "/settle", body: settleBody });
      const rpc = createPublicClient({ transport: http(stalled.rpcUrl) });
      const facilitator = stalled.facilitator.address;
      for (let i = 0; i < 200; i++) {
        if ((await rpc.getTransactionCount({ address: facilitator, blockTag: "pending" })) > 0) {
          break;
        }
        await new Promise((r) => setTimeout(r, 25));
      }

      // Under load the worker may keep up with one flood (each verify done before the next body
      // is in): flooded again, up to three times, until its heap gives out.
      const heavy = await heavyRequest(stalled);
      let sawDeath = false;
      for (let round = 0; round < 3 && !sawDeath; round++) {
        await flood(serving, heavy).catch(() => undefined);
        sawDeath = await waitForStderr(serving, /"event":"worker_died"/, 5_000);
      }
      // When no worker death is seen, say how the process ended and what it wrote last.
      const why = `exit ${serving.child.exitCode}, signal ${serving.child.signalCode}; stderr ends: ${serving.stderr().slice(-1500)}`;
      expect(sawDeath, why).toBe(true);
      const died = JSON.parse(
        serving
          .stderr()
          .split("\n")
          .find((l) => l.includes('"worker_died"')) ?? "{}",
      ) as Record<string, unknown>;
      expect(died).toMatchObject({ reason: "out of memory", restart: true });
      // The new worker listens on the very URL the first one had (it was bound to port 0).
      const listening = `"event":"listening","url":"${serving.url}"`;
      const relistened = () => serving.stderr().split(listening).length - 1 >= 2;
      for (let i = 0; i < 300 && !relistened(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(relistened(), serving.stderr()).toBe(true);
      expect(serving.child.exitCode).toBeNull();
      const lost: Answer = await inFlight;
      expect(lost.status === undefined || lost.status === 200 || lost.status >= 500).toBe(true);

      // The journal holds the broadcast; the retried settle follows it instead of sending again.
      const journaled = readFileSync(journal, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { t: string; hash?: Hex })
        .find((line) => line.t === "send")?.hash;
      expect(journaled).toMatch(/^0x[0-9a-f]{64}$/);
      await createTestClient({ mode: "anvil", transport: http(stalled.rpcUrl) }).mine({
        blocks: 1,
      });
      const retried = await send(serving.url, { path: "/settle", body: settleBody });
      expect(retried.status, retried.body).toBe(200);
      expect(JSON.parse(retried.body ?? "")).toMatchObject({
        success: true,
        transactionHash: journaled,
      });
      expect(await rpc.getTransactionCount({ address: facilitator })).toBe(1);
      // The dead worker's journal file does not stay open beside the new worker's.
      const open = processTree(serving.child.pid as number).flatMap((pid) =>
        readdirSync(`/proc/${pid}/fd`).filter((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`) === journal;
          } catch {
            return false;
          }
        }),
      );
      expect(open).toHaveLength(1);

      // SIGTERM still stops, without a restart: cleanly, or (the test's 16 MiB heap can run out
      // while the flood's last requests drain on a busy machine) exit 3 with the death said.
      const before = serving.stderr().length;
      serving.child.kill("SIGTERM");
      const code = await serving.exited;
      const after = serving.stderr().slice(before);
      expect(after).not.toContain('"event":"listening"');
      if (code !== 0) {
        expect({ code, after }).toMatchObject({
          code: 3,
          after: expect.stringMatching(
            /"event":"worker_died"[^\n]*"restart":false,"stopping":true/,
          ),
        });
      }
    } finally {
      serving.child.kill("SIGKILL");
    }
  }, 60_000);

  test("a worker aborted by a native addon (SIGABRT) is a worker death: serve restarts it on the same URL", async () => {
    // A worker thread that ran out of memory inside secp256k1's native addon aborted the whole
    // process (supervisor and all): the worker is a process of its own so that an abort ends only it.
    const serving = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--journal",
      path.join(dir, "abort-journal"),
    ]);
    try {
      const [worker, ...others] = processTree(serving.child.pid as number).slice(1);
      expect(others).toEqual([]);
      expect(worker).toBeGreaterThan(0);
      process.kill(worker as number, "SIGABRT");
      expect(await waitForStderr(serving, /"event":"worker_died"/, 15_000)).toBe(true);
      const died = JSON.parse(
        serving
          .stderr()
          .split("\n")
          .find((l) => l.includes('"worker_died"')) ?? "{}",
      ) as Record<string, unknown>;
      expect(died).toMatchObject({ reason: "killed by SIGABRT", restart: true, deathsInARow: 1 });
      const listening = `"event":"listening","url":"${serving.url}"`;
      const relistened = () => serving.stderr().split(listening).length - 1 >= 2;
      for (let i = 0; i < 300 && !relistened(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(relistened(), serving.stderr()).toBe(true);
      const health = await send(serving.url, { path: "/health" });
      expect(health.status).toBe(200);
      const [next] = processTree(serving.child.pid as number).slice(1);
      expect(next).not.toBe(worker);

      // The supervisor killed outright: its worker does not serve on without it (it holds no locks).
      serving.child.kill("SIGKILL");
      await serving.exited;
      for (let i = 0; i < 100 && existsSync(`/proc/${next}`); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const state = existsSync(`/proc/${next}/stat`)
        ? readFileSync(`/proc/${next}/stat`, "utf8").split(") ")[1]?.[0]
        : "gone";
      expect(["gone", "Z"]).toContain(state);
    } finally {
      serving.child.kill("SIGKILL");
    }
  }, 60_000);

  test("after more than 5 deaths in a row of workers that served under a minute it gives up with exit 3", async () => {
    const serving = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--journal",
      path.join(dir, "give-up-journal"),
      ...FRAGILE,
    ]);
    try {
      const body = await heavyRequest(devnet);
      // Flood whenever a worker is up; between workers the floods are refused at once.
      // However slow the machine, each worker dies within seconds of starting: the count is per
      // worker, not in a clock window, so the six deaths may take as long as they take.
      for (let round = 0; round < 200 && serving.child.exitCode === null; round++) {
        const answers = await flood(serving, body);
        if (answers.every((a) => a.error === "ECONNREFUSED")) {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const code = await Promise.race([
        serving.exited,
        new Promise<string>((r) => setTimeout(() => r("still running"), 5_000)),
      ]);
      // A rare failure ended the process by a signal instead (exit code null): say which, and
      // what the server wrote last, so a failing run explains itself.
      const why = `signal ${serving.child.signalCode}; stderr ends: ${serving.stderr().slice(-1500)}`;
      expect(code, why).toBe(3);
      const deaths = serving.stderr().match(/"event":"worker_died"[^\n]*/g) ?? [];
      expect(deaths).toHaveLength(6);
      expect(deaths.map((line) => /"deathsInARow":(\d+)/.exec(line)?.[1])).toEqual([
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
      ]);
      expect(deaths.at(-1)).toContain('"restart":false');
    } finally {
      serving.child.kill("SIGKILL");
    }
  }, 180_000);
});
