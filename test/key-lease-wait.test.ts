/**
 * A key another replica leases on the PostgreSQL store: `serve` and a CLI `settle` say at once
 * whose lease they wait out and for how long (not after the wait, in silence), and when it does
 * not end, answer `key_in_use` (not `invalid_request`) with the advice that fits each: a server
 * gets its own key, a command sends the payment to the server that holds it.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { type Replica, replicaSigners, startReplica, stopReplicas } from "./helpers/replicas.js";

let devnet: Devnet;
let postgres: Postgres;
let store: string;
let holder: Replica;
let dir: string;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  store = await postgres.freshDatabase("leases");
  holder = await startReplica(devnet, store, replicaSigners[0] as Replica["signer"], 5);
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-lease-wait-"));
}, 90_000);

afterAll(async () => {
  if (holder) await stopReplicas([holder]);
  await postgres?.stop();
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Timed {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Milliseconds from the start to the first stderr line, and to the exit. */
  readonly firstLineAt: number;
  readonly exitedAt: number;
}

/** Runs the built CLI, noting when its first stderr line came. */
function timedCli(args: string[], env: Record<string, string>): Promise<Timed> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  const started = Date.now();
  const child = spawn(process.execPath, ["bin/facilitator.js", ...args], {
    env: { ...clean, FORCE_COLOR: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let firstLineAt = Number.POSITIVE_INFINITY;
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
    if (stderr.includes("\n") && firstLineAt === Number.POSITIVE_INFINITY) {
      firstLineAt = Date.now() - started;
    }
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, firstLineAt, exitedAt: Date.now() - started });
    });
  });
}

/** The same key as the running replica, its store, and a lease of 3 s: it waits 4 s. */
const sameKey = () => ({
  FACILITATOR_RPC_URL: devnet.rpcUrl,
  FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
  FACILITATOR_STORE: store,
  FACILITATOR_STORE_LEASE_SECONDS: "3",
});

describe("a key another replica leases on the store", () => {
  test("serve says at once whose lease it waits for, then exits 2 with key_in_use: its own key", async () => {
    const run = await timedCli(["serve", "--port", "0"], sameKey());
    const address = devnet.facilitator.address.toLowerCase();
    const lines = run.stderr.split("\n").filter(Boolean);
    // Not a terminal: the first line is a JSON log line, long before the wait ends.
    const waiting = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    expect(waiting).toMatchObject({
      event: "waiting_for_signer",
      signers: [{ address, holder: `${os.hostname()}:${holder.child.pid}` }],
      waitSeconds: 4,
    });
    expect(String(waiting.message)).toMatch(
      new RegExp(
        `^signer ${address} is leased by ${os.hostname()}:${holder.child.pid} until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ on the store postgres://.+; waiting up to 4 s for the lease to end`,
      ),
    );
    expect(run.exitedAt - run.firstLineAt).toBeGreaterThan(3_000);

    expect(run.code).toBe(2);
    const answer = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(answer).toMatchObject({ success: false, error: "key_in_use" });
    expect(lines.at(-1)).toBe(`facilitator: ${answer.message}`);
    expect(String(answer.message)).toMatch(
      new RegExp(
        `^signer ${address} is leased by ${os.hostname()}:${holder.child.pid} on the store postgres://\\S+, still after 4 s of waiting: that process runs and renews its lease; give each replica its own key`,
      ),
    );
    expect(run.stdout + run.stderr).not.toContain(devnet.facilitator.privateKey.slice(2));
  }, 30_000);

  test("settle says at once what it waits for, then answers key_in_use: send it to the server", async () => {
    const request = path.join(dir, "request.json");
    writeFileSync(
      request,
      JSON.stringify(await signSampleRequest(devnet, { payer: devnet.payers[0] })),
    );
    const run = await timedCli(["settle", request], sameKey());
    const address = devnet.facilitator.address.toLowerCase();
    const lines = run.stderr.split("\n").filter(Boolean);
    expect(lines[0]).toMatch(
      new RegExp(
        `^facilitator: signer ${address} is leased by ${os.hostname()}:${holder.child.pid} until \\S+Z on the store postgres://\\S+; waiting up to 4 s for the lease to end`,
      ),
    );
    expect(run.exitedAt - run.firstLineAt).toBeGreaterThan(3_000);

    expect(run.code).toBe(2);
    const answer = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(answer).toMatchObject({ success: false, error: "key_in_use" });
    const message = String(answer.message);
    // The journal file's advice for a command, not a replica's.
    expect(message).toContain(
      "send this payment to POST /settle of the serve that holds it instead (two processes sending with one key can pay a payment twice), or stop that process first",
    );
    expect(message).not.toContain("give each replica its own key");
    expect(lines.at(-1)).toBe(`facilitator: ${message}`);
  }, 30_000);

  test("settle --quiet waits without a word on stderr", async () => {
    const request = path.join(dir, "quiet.json");
    writeFileSync(
      request,
      JSON.stringify(await signSampleRequest(devnet, { payer: devnet.payers[1] })),
    );
    const run = await timedCli(["settle", request, "--quiet"], sameKey());
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: "key_in_use" });
    expect(run.stderr).not.toContain("waiting up to");
  }, 30_000);
});
