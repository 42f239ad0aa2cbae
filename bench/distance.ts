/**
 * Settling at a distance (issue 38): the devnet's anvil behind the provider proxy
 * (test/helpers/rpc-proxy.ts) with 200-500 ms added to every RPC request, uniformly drawn, as a
 * provider in another region answers. Measures, one payment at a time:
 *
 * - `confirmed` settles through `facilitator serve` (BENCH_DISTANCE_SETTLES, default 20, after
 *   one warm-up): p50/p90 of the answer's time, and the sequential RPC round trips of each;
 * - the CLI's `pay | settle -` (BENCH_DISTANCE_CLI, default 5 runs): wall time of the pipe, and
 *   the round trips of `pay` and of `settle -` run apart.
 *
 * A round trip is one wait for the provider: requests made together (a batch, or in parallel)
 * count once (the proxy's `sequentialRounds`). The devnet mines a transaction as it comes, so
 * the block's own wait is near zero here: its synchronous send is counted as a round trip.
 * Checks that every payment landed once (the payee's balance); exits 1 otherwise.
 *
 *   npm run build && npm run bench:distance
 *   BENCH_DISTANCE_MIN_MS=100 BENCH_DISTANCE_MAX_MS=200 npm run bench:distance
 */
import { type ChildProcess, execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, http } from "viem";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { type Recorded, type RpcProxy, startRpcProxy } from "../test/helpers/rpc-proxy.js";
import { cleanEnv, percentile, post, setting, stopChild } from "./lib.js";
import { AMOUNT, devAccount, ROOT, startFacilitator } from "./settle-lib.js";

const SETTLES = Math.floor(setting("BENCH_DISTANCE_SETTLES", 20));
const CLI_RUNS = Math.floor(setting("BENCH_DISTANCE_CLI", 5));
const MIN_MS = setting("BENCH_DISTANCE_MIN_MS", 200);
const MAX_MS = setting("BENCH_DISTANCE_MAX_MS", 500);
const BIN = path.join(ROOT, "bin/facilitator.js");

interface Timed {
  readonly ms: number;
  readonly recorded: Recorded;
}

/** What a chain of round trips asked, round by round: `eth_call+eth_getCode › eth_send…`. */
const chainOf = (recorded: Recorded) =>
  recorded.chain.map((request) => [...new Set(request.methods)].join("+")).join(" › ");

function summary(name: string, runs: readonly Timed[]): string[] {
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const rounds = runs.map((r) => r.recorded.rounds).sort((a, b) => a - b);
  const requests = runs.map((r) => r.recorded.requests.length).sort((a, b) => a - b);
  return [
    name.padEnd(26),
    String(runs.length).padStart(4),
    percentile(ms, 50).toFixed(0).padStart(7),
    percentile(ms, 90).toFixed(0).padStart(7),
    `${percentile(rounds, 50)} (${rounds[0]}-${rounds.at(-1)})`.padStart(11),
    String(percentile(requests, 50)).padStart(9),
  ];
}

/** The most common chain of round trips among the runs, with how many runs took it. */
function typicalChain(runs: readonly Timed[]): string {
  const seen = new Map<string, number>();
  for (const run of runs) {
    const chain = chainOf(run.recorded);
    seen.set(chain, (seen.get(chain) ?? 0) + 1);
  }
  const [chain, count] = [...seen].sort((a, b) => b[1] - a[1])[0] ?? ["", 0];
  return `${count}/${runs.length}: ${chain}`;
}

function runCli(
  command: string,
  env: Record<string, string>,
): Promise<{ ms: number; stdout: string; stderr: string; code: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      "/bin/sh",
      ["-c", command],
      { cwd: ROOT, env: { ...cleanEnv(), FORCE_COLOR: "0", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ ms: performance.now() - started, stdout, stderr, code });
      },
    );
  });
}

async function serveRuns(devnet: Devnet, proxy: RpcProxy, dir: string, problems: string[]) {
  const keyFile = path.join(dir, "key");
  writeFileSync(keyFile, `${devAccount(0).privateKey}\n`, { mode: 0o600 });
  const started = startFacilitator([
    "--rpc-url",
    proxy.url,
    "--private-key-file",
    keyFile,
    "--journal",
    path.join(dir, "serve-journal.jsonl"),
  ]);
  let child: ChildProcess | undefined = started.child;
  try {
    const server = await started.ready;
    const settle = async (index: number): Promise<Timed | undefined> => {
      const payer = devnet.payers[index % devnet.payers.length] ?? devnet.payers[0];
      const body = { ...(await signSampleRequest(devnet, { payer })), waitUntil: "confirmed" };
      // Nothing else is asked of the proxy meanwhile: the recording is this settle's.
      const recorder = proxy.record();
      const answer = await post(`${server.url}/settle`, JSON.stringify(body), 60_000);
      const recorded = recorder.stop();
      if (answer.status !== 200 || answer.body?.success !== true) {
        problems.push(`serve settle ${index}: ${answer.status} ${answer.text ?? answer.error}`);
        return undefined;
      }
      return { ms: answer.ms, recorded };
    };
    await settle(0);
    const runs: Timed[] = [];
    for (let i = 1; i <= SETTLES; i++) {
      const run = await settle(i);
      if (run) runs.push(run);
    }
    return runs;
  } finally {
    if (child) await stopChild(child);
    child = undefined;
  }
}

async function cliRuns(proxy: RpcProxy, dir: string, problems: string[]) {
  const env = {
    FACILITATOR_RPC_URL: proxy.url,
    FACILITATOR_PRIVATE_KEY: devAccount(0).privateKey,
    FACILITATOR_JOURNAL: path.join(dir, "cli-journal.jsonl"),
  };
  const node = JSON.stringify(process.execPath);
  const bin = JSON.stringify(BIN);
  const pipe: Timed[] = [];
  const pays: Timed[] = [];
  const settles: Timed[] = [];
  for (let i = 0; i < CLI_RUNS; i++) {
    const payer = 1 + (i % 5);
    let recorder = proxy.record();
    const piped = await runCli(
      `${node} ${bin} pay --payer ${payer} | ${node} ${bin} settle -`,
      env,
    );
    pipe.push({ ms: piped.ms, recorded: recorder.stop() });
    if (piped.code !== 0) problems.push(`pay | settle: exit ${piped.code}: ${piped.stderr}`);
    // Apart, for each one's round trips: the payment signed, then settled from its file.
    const file = path.join(dir, `payment-${i}.json`);
    recorder = proxy.record();
    const paid = await runCli(`${node} ${bin} pay --payer ${payer} > ${JSON.stringify(file)}`, env);
    pays.push({ ms: paid.ms, recorded: recorder.stop() });
    if (paid.code !== 0) problems.push(`pay: exit ${paid.code}: ${paid.stderr}`);
    recorder = proxy.record();
    const settled = await runCli(`${node} ${bin} settle - < ${JSON.stringify(file)}`, env);
    settles.push({ ms: settled.ms, recorded: recorder.stop() });
    if (settled.code !== 0) problems.push(`settle -: exit ${settled.code}: ${settled.stderr}`);
  }
  return { pipe, pays, settles };
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  console.log(
    `bench: ${MIN_MS}-${MAX_MS} ms per RPC request (uniform), one payment at a time: ` +
      `${SETTLES} confirmed settles through serve, ${CLI_RUNS} CLI pay | settle; node ${process.version}`,
  );
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-distance-"));
  const devnet = await startDevnet({ port: 0 });
  const proxy = await startRpcProxy(devnet.rpcUrl, { latencyMs: { min: MIN_MS, max: MAX_MS } });
  const problems: string[] = [];
  try {
    const rpc = createPublicClient({ transport: http(devnet.rpcUrl, { retryCount: 0 }) });
    const payeeBalance = () =>
      rpc.readContract({
        address: devnet.token.address,
        abi: testUsdcAbi,
        functionName: "balanceOf",
        args: [devnet.payee.address],
      });
    const before = await payeeBalance();
    const served = await serveRuns(devnet, proxy, dir, problems);
    const cli = await cliRuns(proxy, dir, problems);
    const after = await payeeBalance();
    // The warm-up, the settles, and two CLI settles a run; each 0.01 test USDC.
    const expected = BigInt(1 + served.length + 2 * CLI_RUNS) * AMOUNT;
    if (after - before !== expected && problems.length === 0) {
      problems.push(`payee got ${after - before}, expected ${expected}`);
    }
    console.log("");
    const header = ["what", "runs", "p50 ms", "p90 ms", "rounds p50", "requests"];
    const widths = [26, 4, 7, 7, 11, 9];
    console.log(
      header.map((h, i) => (i === 0 ? h.padEnd(26) : h.padStart(widths[i] ?? 0))).join("  "),
    );
    for (const row of [
      summary("serve settle (confirmed)", served),
      summary("CLI pay | settle -", cli.pipe),
      summary("CLI pay", cli.pays),
      summary("CLI settle -", cli.settles),
    ]) {
      console.log(row.join("  "));
    }
    console.log("");
    console.log(`serve settle round trips, ${typicalChain(served)}`);
    console.log(`CLI pay round trips, ${typicalChain(cli.pays)}`);
    console.log(`CLI settle - round trips, ${typicalChain(cli.settles)}`);
  } finally {
    await proxy.close();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const problem of problems) console.error(`bench: FAILED ${problem}`);
  if (problems.length === 0) console.log("every payment landed once");
  return problems.length === 0 ? 0 : 1;
}

process.exitCode = await main();
