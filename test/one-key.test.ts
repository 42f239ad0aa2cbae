/**
 * One key, one writer: `facilitator settle` commands started together with one settlement key
 * take turns (each payment lands once and is answered once), and a second `serve` on a key or a
 * journal file that a live process holds refuses to start, naming that process. A lock left by a
 * killed process does not block a restart. Blocks come at a steady pace here (every 0.4 s, mined
 * by the test: anvil's own interval mining counts whole seconds), with nothing mined on arrival,
 * as on a real chain: a transaction waits in the pool until the next block.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createTestClient, http } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { chainOf, poolDrained, tokenBalance } from "./helpers/chain.js";
import { startServe } from "./helpers/serve.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");

let devnet: Devnet;
let dir: string;
let keyFile: string;
/** Lock files of the processes these tests start: never the user's. */
let locks: string;

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** The CLI's settings here: the devnet, its settlement key, and lock files under `dir`. */
function settings(extra: Record<string, string> = {}): Record<string, string> {
  return {
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY_FILE: keyFile,
    FACILITATOR_LOCK_DIR: locks,
    ...extra,
  };
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { FORCE_COLOR: "0" };
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("FACILITATOR_")) base[name] = value;
  }
  return { ...base, ...settings(extra) };
}

interface Run {
  readonly code: number | null;
  readonly answer: Record<string, unknown>;
  readonly stderr: string;
  readonly child: ChildProcess;
}

/** Starts `facilitator settle FILE ...args`; resolves with its exit status and JSON answer. */
function settle(
  file: string,
  args: string[],
  extra: Record<string, string>,
): { child: ChildProcess; done: Promise<Run> } {
  return run(["settle", file, ...args], extra);
}

function run(args: string[], extra: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: env(extra),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
  const done = new Promise<Run>((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      let answer: Record<string, unknown> = {};
      try {
        answer = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        answer = { unparsed: stdout };
      }
      resolve({ code, answer, stderr, child });
    }),
  );
  return { child, done };
}

/** A payment of 0.01 test USDC to the payee (a fresh authorization nonce each), in a request file. */
let payments = 0;
async function paymentFile(name: string): Promise<string> {
  const payer = devnet.payers[payments++ % devnet.payers.length];
  if (!payer) throw new Error("the devnet has no payers");
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(await signSampleRequest(devnet, { payer })));
  return file;
}

/** The transactions `from` got mined after block `after`: how many, and how many reverted. */
async function minedFrom(from: Address, after: bigint) {
  const chain = chainOf(devnet);
  const latest = await chain.getBlockNumber();
  let sent = 0;
  let reverted = 0;
  for (let n = after + 1n; n <= latest; n++) {
    const block = await chain.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== from.toLowerCase()) continue;
      sent++;
      const receipt = await chain.getTransactionReceipt({ hash: tx.hash });
      if (receipt.status !== "success") reverted++;
    }
  }
  return { sent, reverted };
}

/** Blocks every `blockMs` (0: none), mined by the test from beforeAll to afterAll. */
const BLOCK_MS = 400;
let blockMs = BLOCK_MS;
let mining = true;
let miner: Promise<void> | undefined;
async function mineBlocks() {
  while (mining) {
    const every = blockMs;
    await new Promise((r) => setTimeout(r, every || 20));
    if (every > 0 && blockMs > 0 && mining) await anvil().mine({ blocks: 1 });
  }
}

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-one-key-")),
  ]);
  locks = path.join(dir, "locks");
  keyFile = path.join(dir, "facilitator.key");
  await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  // A block every BLOCK_MS, and a transaction waits in the pool until then.
  miner = mineBlocks();
}, 60_000);

afterAll(async () => {
  mining = false;
  await miner;
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("settle commands started together with one key", () => {
  for (const waitUntil of ["confirmed", "submitted"] as const) {
    it(`take turns: 10 payments (--wait-until ${waitUntil}), a journal each, each lands once and is answered once`, async () => {
      const key = devnet.facilitator.address;
      const files = await Promise.all(
        Array.from({ length: 10 }, (_, i) => paymentFile(`parallel-${waitUntil}-${i}`)),
      );
      await poolDrained(devnet, key);
      const start = await chainOf(devnet).getBlockNumber();
      const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
      const runs = await Promise.all(
        files.map(
          (file, i) =>
            settle(file, ["--wait-until", waitUntil], {
              FACILITATOR_JOURNAL: path.join(dir, `parallel-${waitUntil}-${i}.jsonl`),
            }).done,
        ),
      );
      await poolDrained(devnet, key);
      const mined = await minedFrom(key, start);
      const answered = runs.filter((run) => run.code === 0 && run.answer.success === true).length;
      expect(
        { answered, ...mined },
        runs.map((run) => `${run.code} ${JSON.stringify(run.answer)}`).join("\n"),
      ).toEqual({ answered: 10, sent: 10, reverted: 0 });
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 10n * 10_000n);
      // Every lock was given back.
      expect(readdirSync(locks).filter((name) => name.endsWith(".lock"))).toEqual([]);
    }, 120_000);
  }

  for (const journals of ["one journal", "a journal each"] as const) {
    it(`the same payment settled twice at once (${journals}, --wait-until submitted): one success`, async () => {
      const key = devnet.facilitator.address;
      const files = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          paymentFile(`twice-${journals.replace(/ /g, "-")}-${i}`),
        ),
      );
      await poolDrained(devnet, key);
      const start = await chainOf(devnet).getBlockNumber();
      const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
      // Slower blocks: the second of a pair starts while the first's transaction is unmined.
      blockMs = 1_000;
      const pairs = await Promise.all(
        files.map((file, i) =>
          Promise.all(
            [0, 1].map(
              (j) =>
                settle(file, ["--wait-until", "submitted"], {
                  FACILITATOR_JOURNAL: path.join(
                    dir,
                    journals === "one journal" ? `twice-one-${i}.jsonl` : `twice-${i}-${j}.jsonl`,
                  ),
                }).done,
            ),
          ),
        ),
      ).finally(() => {
        blockMs = BLOCK_MS;
      });
      await poolDrained(devnet, key);
      const mined = await minedFrom(key, start);
      const successes = pairs.map(
        (pair) => pair.filter((run) => run.answer.success === true).length,
      );
      expect(
        { successes, ...mined },
        pairs
          .flat()
          .map((run) => `${run.code} ${JSON.stringify(run.answer)}`)
          .join("\n"),
      ).toEqual({ successes: [1, 1, 1, 1, 1], sent: 5, reverted: 0 });
      // The other answer of each pair says why: the payment is already settled.
      for (const pair of pairs) {
        const refused = pair.find((run) => run.answer.success !== true);
        expect(refused?.code).toBe(1);
        expect(String(refused?.answer.error)).toMatch(/nonce_already_used|duplicate_settlement/);
      }
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 5n * 10_000n);
    }, 120_000);
  }

  it("a settle that cannot have its turn in time says who holds the key; nothing is sent", async () => {
    const key = devnet.facilitator.address;
    await poolDrained(devnet, key);
    // No blocks: the first settle waits for its receipt, holding the key.
    blockMs = 0;
    const pending = () =>
      chainOf(devnet).getTransactionCount({ address: key, blockTag: "pending" });
    const before = await pending();
    const first = settle(await paymentFile("holder"), [], {
      FACILITATOR_JOURNAL: path.join(dir, "holder.jsonl"),
    });
    try {
      for (let i = 0; i < 200 && (await pending()) === before; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await pending()).toBe(before + 1);
      const started = Date.now();
      const second = await settle(await paymentFile("waiter"), [], {
        FACILITATOR_JOURNAL: path.join(dir, "waiter.jsonl"),
        FACILITATOR_LOCK_TIMEOUT: "1",
      }).done;
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(second.code, JSON.stringify(second.answer)).toBe(3);
      expect(second.answer).toMatchObject({ success: false, error: "settlement_failed" });
      const message = String(second.answer.message);
      expect(message).toContain(`facilitator settle (pid ${first.child.pid}`);
      expect(message).toContain(key);
      expect(message).toContain("nothing was sent");
      expect(message).not.toContain(devnet.facilitator.privateKey.slice(2));
      expect(second.stderr).toContain(`waiting for facilitator settle (pid ${first.child.pid}`);
      expect(await pending()).toBe(before + 1);
      blockMs = BLOCK_MS;
      expect((await first.done).code).toBe(0);
    } finally {
      blockMs = BLOCK_MS;
      first.child.kill("SIGKILL");
    }
  }, 60_000);
});

describe("Ctrl-C while a settle waits for its turn", () => {
  it("answers interrupted (nothing was broadcast), exit 130, and leaves the holder's lock", async () => {
    // The holder: a live process named in the key's lock file as a settle.
    const holder = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
    });
    const lockDir = path.join(dir, "ctrl-c-locks");
    const keyLock = path.join(lockDir, `key-${devnet.facilitator.address.toLowerCase()}.lock`);
    await mkdir(lockDir, { recursive: true });
    await writeFile(
      keyLock,
      JSON.stringify({
        pid: holder.pid,
        host: os.hostname(),
        command: "facilitator settle",
        since: new Date().toISOString(),
        // What every lock on Linux records (field 22 of /proc/PID/stat): its holder's start time.
        started: existsSync("/proc/self/stat")
          ? readFileSync(`/proc/${holder.pid}/stat`, "utf8").split(") ")[1]?.split(" ")[19]
          : undefined,
        token: "holder",
      }),
    );
    try {
      const waiting = settle(await paymentFile("ctrl-c"), [], {
        FACILITATOR_JOURNAL: path.join(dir, "ctrl-c.jsonl"),
        FACILITATOR_LOCK_DIR: lockDir,
      });
      let stderr = "";
      waiting.child.stderr?.on("data", (chunk: string) => {
        stderr += chunk;
      });
      for (let i = 0; i < 200 && !stderr.includes("waiting for"); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(stderr).toContain(`waiting for facilitator settle (pid ${holder.pid}`);
      waiting.child.kill("SIGINT");
      const run = await waiting.done;
      expect(run.code).toBe(130);
      expect(run.answer).toMatchObject({ success: false, error: "interrupted" });
      expect(String(run.answer.message)).toContain("nothing was broadcast");
      expect(JSON.parse(readFileSync(keyLock, "utf8")).pid).toBe(holder.pid);
      // Its journal's lock, taken before the key's, was given back.
      expect(existsSync(path.join(dir, "ctrl-c.jsonl.lock"))).toBe(false);
    } finally {
      holder.kill("SIGKILL");
    }
  });
});

describe("serve holds its key and its journal", () => {
  it("a second serve on the key, or on the journal, refuses to start naming the first; settle is refused at once", async () => {
    const journal = path.join(dir, "serve-a.jsonl");
    const first = await startServe(["--journal", journal], settings());
    try {
      const pid = first.child.pid;
      const sameKey = await startServe(
        ["--journal", path.join(dir, "serve-b.jsonl")],
        settings(),
      ).then(
        (s) => {
          s.child.kill("SIGKILL");
          return "started";
        },
        (error: Error) => error.message,
      );
      expect(sameKey).toMatch(/^serve exited 2/);
      expect(sameKey).toContain(`facilitator serve (pid ${pid}`);
      expect(sameKey).toContain(devnet.facilitator.address);

      const otherKey = path.join(dir, "other.key");
      await writeFile(otherKey, generatePrivateKey(), { mode: 0o600 });
      const sameJournal = await startServe(
        ["--journal", journal],
        settings({ FACILITATOR_PRIVATE_KEY_FILE: otherKey }),
      ).then(
        (s) => {
          s.child.kill("SIGKILL");
          return "started";
        },
        (error: Error) => error.message,
      );
      expect(sameJournal).toMatch(/^serve exited 2/);
      expect(sameJournal).toContain(`facilitator serve (pid ${pid}`);
      expect(sameJournal).toContain(journal);

      // A settle with the serve's key is refused at once, and pointed at the server.
      const started = Date.now();
      const refused = await settle(await paymentFile("to-serve"), [], {
        FACILITATOR_JOURNAL: path.join(dir, "to-serve.jsonl"),
      }).done;
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(refused.code).toBe(2);
      expect(refused.answer.error).toBe("key_in_use");
      const message = String(refused.answer.message);
      expect(message).toContain(`facilitator serve (pid ${pid}`);
      expect(message).toContain(`${first.url}/settle`);

      // doctor says who holds the journal (and only reads it).
      const doctor = await run(["doctor", "--json", "--journal", journal], {}).done;
      expect(JSON.stringify(doctor.answer)).toContain(
        `${journal} is in use by facilitator serve (pid ${pid}`,
      );
    } finally {
      first.child.kill("SIGKILL");
      await first.exited;
    }
  }, 60_000);

  it("a lock left by a serve killed with SIGKILL does not block a restart", async () => {
    const journal = path.join(dir, "killed.jsonl");
    const first = await startServe(["--journal", journal], settings());
    first.child.kill("SIGKILL");
    await first.exited;
    // Its lock files are still there: nobody removed them.
    expect(readdirSync(locks).some((name) => name.endsWith(".lock"))).toBe(true);
    expect(existsSync(`${journal}.lock`)).toBe(true);
    const again = await startServe(["--journal", journal], settings());
    try {
      const holder = JSON.parse(readFileSync(`${journal}.lock`, "utf8")) as { pid: number };
      expect(holder.pid).toBe(again.child.pid);
    } finally {
      again.child.kill("SIGTERM");
      expect(await again.exited).toBe(0);
    }
    // A clean stop gives its locks back.
    expect(existsSync(`${journal}.lock`)).toBe(false);
  }, 60_000);
});
