/**
 * The journal at months of history: one real settlement is made through `facilitator serve` on
 * anvil, its journal lines (send, landed, answered, and a payment-identifier's answer) are copied
 * JOURNAL_SETTLEMENTS times (default 1M) with fresh keys, hashes and identifiers, and then:
 * how long `serve` takes to answer /health on that journal (twice: the first start after the
 * history was written, then a restart), how long `facilitator status --transaction` takes for the
 * newest and the oldest settlement, and how big the files are. Last, in this process: settles
 * journaled (send, then answer) at STALL_RATE a second (default 100) on a journal holding its
 * full 20,000 settled entries, with compactions forced back to back, against the same without:
 * the longest a settle's record waited, and the event loop's longest stall.
 *
 *   npm run bench:journal                       # 1M settlements (~1.9 GB of journal)
 *   JOURNAL_SETTLEMENTS=100000 npm run bench:journal
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { NewEntry } from "../src/core/store.js";
import { startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Journal } from "../src/store/journal.js";
import { percentile, servedUrl, setting, tail } from "./lib.js";

const SETTLEMENTS = setting("JOURNAL_SETTLEMENTS", 1_000_000);
/** One settlement in this many carries a payment-identifier (its answer is a line of its own). */
const WITH_ID_EVERY = 10;

const devnet = await startDevnet({ port: 0 });
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-growth-"));
const keyFile = path.join(dir, "key");
const journal = path.join(dir, "journal.jsonl");
writeFileSync(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
// Locks of its own: other runs on this machine use the devnet's key too.
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_"))),
  FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
};
const cli = (args: string[]) => [
  "bin/facilitator.js",
  ...args,
  "--rpc-url",
  devnet.rpcUrl,
  "--journal",
  journal,
];

function serve(): { child: ChildProcess; url: Promise<string>; log: () => string } {
  const child = spawn(
    process.execPath,
    cli(["serve", "--port", "0", "--private-key-file", keyFile, "--rate-per-payer", "0"]),
    { env, stdio: ["ignore", "ignore", "pipe"] },
  );
  const log = tail(child.stderr);
  return { child, url: servedUrl(child, log), log };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Milliseconds from spawning `serve` to /health answering 200. */
async function startUp(): Promise<{ ms: number; child: ChildProcess; url: string }> {
  const started = performance.now();
  const server = serve();
  const url = await server.url;
  for (;;) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { ms: performance.now() - started, child: server.child, url };
    await new Promise((r) => setTimeout(r, 10));
  }
}

function status(asked: string[]): { ms: number; found: boolean; detail: string } {
  const started = performance.now();
  const run = spawnSync(process.execPath, cli(["status", ...asked, "--quiet"]), {
    env,
    encoding: "utf8",
    maxBuffer: 1 << 24,
  });
  const ms = performance.now() - started;
  const answer = JSON.parse(run.stdout || "{}") as { found?: boolean; detail?: string };
  return { ms, found: answer.found === true, detail: answer.detail ?? "" };
}

const bytesIn = (where: string): number =>
  statSync(where).isDirectory()
    ? readdirSync(where).reduce((sum, name) => sum + bytesIn(path.join(where, name)), 0)
    : statSync(where).size;

const hex = (seed: string, bytes: number) =>
  createHash("sha256")
    .update(seed)
    .digest("hex")
    .repeat(2)
    .slice(0, bytes * 2);

try {
  // 1. One real settlement, with a payment-identifier, through serve.
  const first = await startUp();
  const request = await signSampleRequest(devnet, { payer: devnet.payers[0] as never });
  const reply = (await fetch(`${first.url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
  }).then((r) => r.json())) as {
    success?: boolean;
    transaction?: string;
    transactionHash?: string;
  };
  await stop(first.child);
  if (!reply.success) throw new Error(`the template settle failed: ${JSON.stringify(reply)}`);
  const template = readFileSync(journal, "utf8")
    .split("\n")
    .filter((line) => /"t":"(send|state)"/.test(line));
  const send = template.find((l) => l.includes('"t":"send"')) as string;
  const key = (JSON.parse(send) as { key: string }).key;
  const hash = (JSON.parse(send) as { hash: string }).hash;
  const own = template.filter((l) => l.includes(JSON.stringify(key)));
  // An answer as a payment-identifier keeps it: the settle response.
  const idLine = JSON.stringify({
    t: "id",
    id: "pay_template_0000000000",
    fingerprint: hex("fingerprint", 32),
    answer: reply,
    at: new Date().toISOString(),
  });

  // 2. JOURNAL_SETTLEMENTS copies, each its own key, hash and identifier, a second apart.
  const fd = openSync(journal, "w", 0o600);
  const startAt = Date.now() - SETTLEMENTS * 1000;
  const oldest = `0x${hex("tx0", 32)}`;
  const newest = `0x${hex(`tx${SETTLEMENTS - 1}`, 32)}`;
  let chunk = "";
  for (let i = 0; i < SETTLEMENTS; i++) {
    const at = new Date(startAt + i * 1000).toISOString();
    const txHash = `0x${hex(`tx${i}`, 32)}`;
    const nonce = `0x${hex(`nonce${i}`, 32)}`;
    const keyI = key.replace(/0x[0-9a-f]{64}$/, nonce);
    for (const line of own) {
      chunk += `${line
        .replace(JSON.stringify(key), JSON.stringify(keyI))
        .replace(hash, txHash)
        .replace(/"at":"[^"]+"/, `"at":"${at}"`)}\n`;
    }
    if (i % WITH_ID_EVERY === 0) {
      chunk += `${idLine
        .replace("pay_template_0000000000", `pay_${hex(`id${i}`, 12)}`)
        .replace((reply.transactionHash ?? reply.transaction) as string, txHash)
        .replace(/"at":"[^"]+"/, `"at":"${at}"`)}\n`;
    }
    if (chunk.length > 1 << 22) {
      writeSync(fd, chunk);
      chunk = "";
    }
  }
  writeSync(fd, chunk);
  closeSync(fd);
  const historyBytes = statSync(journal).size;
  console.log(
    `journal: ${SETTLEMENTS} settlements, ${(historyBytes / 2 ** 20).toFixed(0)} MiB, ${(historyBytes / SETTLEMENTS).toFixed(0)} bytes per settlement`,
  );

  // 3. Start-up on it, twice: the first start sees the whole history; the restart, what the
  // first left.
  for (const which of ["first start", "restart"]) {
    const up = await startUp();
    console.log(`${which}: /health answered after ${(up.ms / 1000).toFixed(1)} s`);
    await stop(up.child);
    const files = readdirSync(dir).filter((n) => n.startsWith("journal"));
    const sizes = files.map((n) => `${n} ${(bytesIn(path.join(dir, n)) / 2 ** 20).toFixed(1)} MiB`);
    console.log(`  files: ${sizes.join(", ")}`);
  }

  // 4. status for the newest and the oldest settlement, and the oldest by its identifier.
  for (const [which, asked] of [
    ["newest", ["--transaction", newest]],
    ["oldest", ["--transaction", oldest]],
    ["oldest", ["--id", `pay_${hex("id0", 12)}`]],
  ] as const) {
    const answer = status([...asked]);
    console.log(
      `status ${asked[0]} (${which}): ${(answer.ms / 1000).toFixed(1)} s, ${answer.found ? "found" : `not found: ${answer.detail}`}`,
    );
  }

  // 5. The settle path while compacting: each settle's two records, timed, at a steady rate.
  const sendRecord = JSON.parse(send) as NewEntry & { hash: string; raw: `0x${string}` };
  const {
    t: _t,
    hash: _h,
    raw,
    owner: _o,
    at: _a,
    ...newEntry
  } = sendRecord as never as Record<string, unknown>;
  const stallFile = path.join(dir, "stall.jsonl");
  const stallJournal = new Journal(stallFile, { compactAfterLines: 1e9 });
  const settleOne = async (i: number) => {
    const started = performance.now();
    await stallJournal.recordSend(
      { ...(newEntry as unknown as NewEntry), key: `stall:${i}` },
      `0x${hex(`stall${i}`, 32)}`,
      raw as `0x${string}`,
    );
    await stallJournal.markAnswered(`stall:${i}`);
    return performance.now() - started;
  };
  for (let i = 0; i < 25_000; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, k) => settleOne(i + k)));
  }
  const rate = setting("STALL_RATE", 100);
  const measure = async (compacting: false | "once" | "back to back", from: number) => {
    const waits: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    let compactions = 0;
    let running = true;
    const compactor = (async () => {
      if (compacting === "once") await new Promise((r) => setTimeout(r, 3_000));
      while (compacting && running) {
        await stallJournal.compact();
        compactions++;
        if (compacting === "once") break;
      }
    })();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < rate * 10; i++) {
      pending.push(settleOne(from + i).then((ms) => void waits.push(ms)));
      await new Promise((r) => setTimeout(r, 1000 / rate));
    }
    await Promise.all(pending);
    running = false;
    await compactor;
    loop.disable();
    const worst = Math.max(...waits);
    console.log(
      `settles at ${rate}/s for 10 s, ${compacting ? `${compactions} compaction(s) of 20,000 settled entries${compacting === "once" ? "" : " back to back"}` : "no compaction"}: record wait p50 ${percentile(waits, 50).toFixed(1)} ms, p99 ${percentile(waits, 99).toFixed(1)} ms, max ${worst.toFixed(1)} ms; event loop max stall ${(loop.max / 1e6).toFixed(1)} ms`,
    );
  };
  await measure(false, 1_000_000);
  await measure("once", 2_000_000);
  await measure("back to back", 3_000_000);
  stallJournal.close();
} finally {
  await devnet.stop();
  if (!process.env.JOURNAL_KEEP) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}
