/**
 * Settle throughput: distinct payments settled through `facilitator serve` (a child process) with
 * `waitUntil: confirmed`, against a fresh devnet per run; once from one settlement key, once from
 * a pool of four. Prints settles/s and latency, then checks on chain that every payment landed
 * exactly once (the payee's balance and the signers' transaction counts). Exits 1 on any error.
 *
 *   npm run build && npm run bench:settle
 *   BENCH_SETTLES=500 BENCH_SETTLE_CONCURRENCY=64 npm run bench:settle
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { exited, setting, stopChild } from "./lib.js";
import {
  devAccount,
  measureSettles,
  ROOT,
  type RunResult,
  report,
  startFacilitator,
} from "./settle-lib.js";

const SETTLES = Math.floor(setting("BENCH_SETTLES", 200));
const CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 32));
/** Most one run may take; settles not started by then count as errors. */
const RUN_SECONDS = setting("BENCH_SETTLE_SECONDS", 120);

/** anvil dev accounts with ETH and no other role in the devnet's payments (8 is the funder). */
const POOL_INDEXES = [0, 6, 7, 8] as const;

async function run(name: string, signers: readonly DevAccount[]): Promise<RunResult> {
  let devnet: Devnet | undefined;
  let child: ChildProcess | undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-settle-"));
  const cleanup = async () => {
    if (child) await stopChild(child);
    await devnet?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    const chain = await startDevnet({ port: 0 });
    devnet = chain;
    const keyFile = path.join(dir, "keys");
    writeFileSync(keyFile, `${signers.map((s) => s.privateKey).join("\n")}\n`, { mode: 0o600 });
    const started = startFacilitator([
      "--rpc-url",
      chain.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      path.join(dir, "journal.jsonl"),
      "--confirm-timeout",
      "60",
    ]);
    child = started.child;
    const server = await started.ready;

    const measured = await measureSettles(chain, [server.url], signers, {
      settles: SETTLES,
      concurrency: CONCURRENCY,
      runSeconds: RUN_SECONDS,
    });
    const problems = [...measured.problems];
    if (exited(server.child)) problems.push(`serve exited early:\n${server.stderr()}`);
    return { ...measured, name, problems };
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  console.log(
    `bench: POST /settle (waitUntil confirmed), ${SETTLES} distinct payments at concurrency ` +
      `${CONCURRENCY}, a fresh devnet and serve process per run; node ${process.version}`,
  );
  const runs: RunResult[] = [];
  try {
    runs.push(await run("one key", [devAccount(0)]));
    runs.push(await run("pool of 4", POOL_INDEXES.map(devAccount)));
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  return report(runs) ? 0 : 1;
}

process.exitCode = await main();
