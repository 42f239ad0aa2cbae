/**
 * Our facilitator next to the x402 reference facilitator (@x402/core + @x402/evm 2.27), on one
 * devnet, on this machine: verify throughput and latency at concurrency 1, 16 and 64, settle
 * throughput from one key beside the chain's own floor (the same transfers sent straight to the
 * node, bench/settle-floor.ts), the cold CLI against a bare node process, and peak memory. Prints
 * one table (ours | reference | ours/reference) and the targets; exits 1 if any request failed or
 * a payment did not land exactly once.
 *
 *   npm run build && npm run bench:compare
 *   BENCH_REQUESTS=2000 BENCH_SECONDS=20 BENCH_SETTLES=1000 npm run bench:compare
 *
 * Settings (environment): BENCH_REQUESTS (verify requests per level, 1000), BENCH_SECONDS (time
 * bound per verify level, 15), BENCH_POOL (distinct signed payloads for verify, 1000),
 * BENCH_SETTLES (settles per server, 600), BENCH_SETTLE_CONCURRENCY (32), BENCH_SETTLE_SECONDS
 * (time bound per settle run, 45), BENCH_SETTLE_ROUNDS (rounds the settles of ours, the reference
 * and the floor take turns in, 4), BENCH_COLD_RUNS (9).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import {
  BARE_HTTP_SCRIPT,
  BARE_NODE_SCRIPT,
  type ColdRuns,
  coldCli,
  idlePeakRssMiB,
} from "./compare-cold.js";
import { cpuLine, latencyAndCpuRows, load, type Round, settleChecks } from "./compare-load.js";
import { distEntry, distFreshness, fmt, type Row, ratio, table } from "./compare-report.js";
import {
  children,
  cpuMeter,
  peakRssMiB,
  perRequest,
  type Server,
  startOurs,
  startReference,
  state,
} from "./compare-servers.js";
import { settlePhase } from "./compare-settle.js";
import { printTargets } from "./compare-targets.js";
import { percentile, setting, stopChild } from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const REQUESTS = Math.floor(setting("BENCH_REQUESTS", 1000));
const SECONDS = setting("BENCH_SECONDS", 15);
const POOL = Math.floor(setting("BENCH_POOL", 1000));
const SETTLES = Math.floor(setting("BENCH_SETTLES", 600));
const SETTLE_CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 32));
const SETTLE_SECONDS = setting("BENCH_SETTLE_SECONDS", 45);
const COLD_RUNS = Math.floor(setting("BENCH_COLD_RUNS", 9));
const SETTLE_ROUNDS = Math.floor(setting("BENCH_SETTLE_ROUNDS", 4));

const VERIFY_LEVELS = [1, 16, 64] as const;
const WARMUP_REQUESTS = 100;
const WARMUP_CONCURRENCY = 8;
/** signSampleRequest's default amount: 0.01 USDC. */
const AMOUNT = 10_000n;
/**
 * anvil dev account indexes: 0 settles for us, 7 for the reference, 6 sends the floor's
 * transfers (1..5 pay, 8 funds, 9 is paid).
 */
const OURS_SIGNER = 0;
const REFERENCE_SIGNER = 7;
const FLOOR_SENDER = 6;

const VERIFY_TIMEOUT_MS = 30_000;
const SETTLE_TIMEOUT_MS = 60_000;

const median = (values: readonly number[]) => percentile(values, 50);
const times = (runs: ColdRuns) => runs.ms.map((m) => m.toFixed(0)).join(" ");

function devAccount(index: number): DevAccount {
  const account = devAccounts[index];
  if (!account) throw new Error(`no dev account ${index}`);
  return account;
}

async function signBodies(devnet: Devnet, count: number, extra: object = {}): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) =>
      JSON.stringify({
        ...(await signSampleRequest(devnet, {
          payer: devnet.payers[i % devnet.payers.length] as DevAccount,
          amount: AMOUNT,
        })),
        ...extra,
      }),
    ),
  );
}

/** Error samples, a few per list, for the end of the report. */
class ErrorSamples {
  readonly samples: string[] = [];
  keep(what: string, errors: readonly string[]): void {
    for (const e of errors.slice(0, 3)) this.samples.push(`${what}: ${e}`);
    if (errors.length > 3) this.samples.push(`${what}: … ${errors.length - 3} more`);
  }
}

type VerifyResults = Map<number, { ours: Round; reference: Round }>;

/** Verify at each level, the order of the two servers alternating per level. */
async function verifyPhase(
  chain: Devnet,
  servers: readonly [Server, Server],
  bodies: readonly string[],
  rows: Row[],
  errors: ErrorSamples,
): Promise<VerifyResults> {
  const [ours, reference] = servers;
  for (const server of servers) {
    const warm = await load(
      `${server.url}/verify`,
      bodies,
      WARMUP_CONCURRENCY,
      WARMUP_REQUESTS,
      SECONDS,
      VERIFY_TIMEOUT_MS,
    );
    errors.keep(`${server.name} verify warm-up`, warm.errors);
  }
  const results: VerifyResults = new Map();
  for (const [i, concurrency] of VERIFY_LEVELS.entries()) {
    const order = i % 2 === 0 ? [ours, reference] : [reference, ours];
    const level = new Map<string, Round>();
    for (const server of order) {
      // Opening this level's connections is not what is measured: warm them up first.
      const url = `${server.url}/verify`;
      const opening = await load(
        url,
        bodies,
        concurrency,
        2 * concurrency,
        SECONDS,
        VERIFY_TIMEOUT_MS,
      );
      errors.keep(`${server.name} verify c=${concurrency} warm-up`, opening.errors);
      const meter = cpuMeter(server.pid, chain.anvil.pid);
      const loaded = await load(url, bodies, concurrency, REQUESTS, SECONDS, VERIFY_TIMEOUT_MS);
      const round = { ...loaded, cpu: meter() };
      level.set(server.name, round);
      errors.keep(`${server.name} verify c=${concurrency}`, round.errors);
      console.log(
        `verify c=${concurrency} ${server.name.padEnd(9)} ${round.count} requests in ` +
          `${round.seconds.toFixed(2)} s, ${round.errors.length} errors; ${cpuLine(round)}`,
      );
    }
    const o = level.get("ours") as Round;
    const r = level.get("reference") as Round;
    results.set(concurrency, { ours: o, reference: r });
    rows.push(
      {
        label: `verify c=${concurrency} req/s`,
        ours: o.count / o.seconds,
        reference: r.count / r.seconds,
        digits: 0,
        errors: [o.errors.length, r.errors.length],
      },
      ...latencyAndCpuRows(`verify c=${concurrency}`, "req", o, r, 2),
    );
  }
  return results;
}

async function main(): Promise<number> {
  const entry = distEntry();
  if (!existsSync(path.join(ROOT, entry))) {
    console.error(`bench: ${entry} is missing; run \`npm run build\` first`);
    return 2;
  }
  const stale = distFreshness();

  let devnet: Devnet | undefined;
  const servers: Server[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-compare-"));
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await Promise.all(servers.map((s) => stopChild(s.child)));
      await Promise.all([...children].map(stopChild));
      await devnet?.stop();
      rmSync(dir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  const interrupted = () => {
    state.interrupting = true;
    console.error("\nbench: interrupted, stopping everything");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  try {
    const started = performance.now();
    console.log(
      `bench:compare on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), ` +
        `node ${process.version}, ${os.platform()} ${os.release()}`,
    );
    if (stale) console.log(`bench: WARNING ${stale}`);

    const chain = await startDevnet({ port: 0 });
    devnet = chain;
    const keyFile = path.join(dir, "facilitator.key");
    writeFileSync(keyFile, `${devAccount(OURS_SIGNER).privateKey}\n`, { mode: 0o600 });

    const [ours, reference] = await Promise.all([
      startOurs(chain.rpcUrl, keyFile, path.join(dir, "journal.jsonl")),
      startReference(chain.rpcUrl, devAccount(REFERENCE_SIGNER).privateKey),
    ]);
    servers.push(ours, reference);
    console.log(`devnet ${chain.network} at ${chain.rpcUrl}`);
    console.log(
      `ours:      ${ours.url} (pid ${ours.pid}) node bin/facilitator.js serve --quiet, ` +
        `signer dev account ${OURS_SIGNER}`,
    );
    console.log(
      `reference: ${reference.url} (pid ${reference.pid}) bench/reference-server.ts under tsx: ` +
        `x402Facilitator + ExactEvmScheme 2.27, toFacilitatorEvmSigner(viem wallet client), ` +
        `privateKeyToAccount(key, { nonceManager }) (the reference's recommended setup for ` +
        `concurrent settles from one key), signer dev account ${REFERENCE_SIGNER}`,
    );

    const signing = performance.now();
    const verifyBodies = await signBodies(chain, POOL);
    const requestFile = path.join(dir, "request.json");
    writeFileSync(requestFile, verifyBodies[0] as string);
    const bareFetch = path.join(dir, "bare-fetch.mjs");
    writeFileSync(bareFetch, BARE_NODE_SCRIPT);
    const bareHttp = path.join(dir, "bare-http.mjs");
    writeFileSync(bareHttp, BARE_HTTP_SCRIPT);
    console.log(
      `signed ${POOL} verify payloads from ${chain.payers.length} payers in ` +
        `${((performance.now() - signing) / 1000).toFixed(1)} s`,
    );

    const rows: Row[] = [];
    const errors = new ErrorSamples();
    const pair = [ours, reference] as const;
    const verify = await verifyPhase(chain, pair, verifyBodies, rows, errors);
    const rssAfterVerify = [peakRssMiB(ours.pid), peakRssMiB(reference.pid)] as const;
    const confirmed = { waitUntil: "confirmed" };
    const settle = await settlePhase(
      chain,
      pair,
      {
        amount: AMOUNT,
        concurrency: SETTLE_CONCURRENCY,
        seconds: SETTLE_SECONDS,
        timeoutMs: SETTLE_TIMEOUT_MS,
        settles: SETTLES,
        rounds: SETTLE_ROUNDS,
        signers: { ours: devAccount(OURS_SIGNER), reference: devAccount(REFERENCE_SIGNER) },
        floorSender: devAccount(FLOOR_SENDER),
        bodies: {
          ours: await signBodies(chain, SETTLES + 1, confirmed),
          reference: await signBodies(chain, SETTLES + 1, confirmed),
        },
      },
      rows,
      (what, list) => errors.keep(what, list),
    );
    const rssAfterSettle = [peakRssMiB(ours.pid), peakRssMiB(reference.pid)] as const;
    rows.push(
      {
        label: "peak RSS MiB after verify",
        ours: rssAfterVerify[0],
        reference: rssAfterVerify[1],
        digits: 1,
      },
      {
        label: "peak RSS MiB after settle",
        ours: rssAfterSettle[0],
        reference: rssAfterSettle[1],
        digits: 1,
      },
    );

    // The servers are done: stop them so the cold runs have the machine to themselves.
    await Promise.all(servers.map((s) => stopChild(s.child)));
    const cold = await coldCli(chain.rpcUrl, requestFile, [bareFetch, bareHttp], COLD_RUNS);
    const [withFetch, withHttp] = cold.bare as [ColdRuns, ColdRuns];
    const idleNode = await idlePeakRssMiB([]);
    const idleTsx = await idlePeakRssMiB(["--import", "tsx"]);
    errors.keep("ours cold verify", cold.ours.errors);
    errors.keep("bare node (fetch)", withFetch.errors);
    errors.keep("bare node (node:http)", withHttp.errors);
    const medianOf = (runs: ColdRuns) => (runs.ms.length ? median(runs.ms) : undefined);
    const coldOurs = medianOf(cold.ours);
    const coldBare = medianOf(withFetch);
    rows.push(
      {
        label: `cold verify ms, median of ${COLD_RUNS} (ref = bare node, fetch)`,
        ours: coldOurs,
        reference: coldBare,
        digits: 0,
        errors: [cold.ours.errors.length, withFetch.errors.length],
      },
      {
        label: `cold verify ms (ref = bare node, node:http)`,
        ours: coldOurs,
        reference: medianOf(withHttp),
        digits: 0,
        errors: [0, withHttp.errors.length],
      },
    );

    console.log("");
    console.log(table(rows));
    console.log("");
    console.log(
      `verify: up to ${REQUESTS} requests or ${SECONDS} s per level and server, a pool of ${POOL} ` +
        "distinct signed payloads, keep-alive node:http from this process (bench/load.ts), after " +
        "2 × c unmeasured requests that open the level's connections; order alternates per level " +
        `(c=1 ours first). Both servers, anvil and this client share the ${os.cpus().length} cores; ` +
        "server CPU ms/req is the server process's user+system time (/proc, 10 ms ticks) per " +
        "request, which does not depend on how the cores are shared.",
    );
    console.log(
      `settle: ${SETTLES} fresh payments per server at concurrency ${SETTLE_CONCURRENCY}, ` +
        `waitUntil confirmed (the reference always waits for the receipt), after one warm-up settle; ` +
        `ours: ${settleChecks(settle.ours, SETTLES, AMOUNT)}; reference: ` +
        `${settleChecks(settle.reference, SETTLES, AMOUNT)}. Floor: the same number of ` +
        "transferWithAuthorization transactions signed beforehand from one key, sent straight to " +
        `anvil at the same concurrency, each waiting for its receipt. The three take turns in ${SETTLE_ROUNDS} ` +
        "rounds (anvil slows as the token's storage grows: all meet the same chain).",
    );
    console.log(
      `cold: wall time of \`node bin/facilitator.js verify <file> --rpc-url <rpc> -q\` vs a bare ` +
        `node process doing one eth_chainId, with fetch and with node:http; ${COLD_RUNS} runs each, ` +
        `the order rotating, after one untimed run of each. ours ${times(cold.ours)} ms; bare ` +
        `(fetch) ${times(withFetch)} ms; bare (node:http) ${times(withHttp)} ms`,
    );
    console.log(
      "memory: VmHWM from /proc; the reference runs under tsx (node --import tsx), whose loader " +
        `is counted in its RSS: an idle node peaks at ${fmt(idleNode, 1)} MiB here, an idle ` +
        `node --import tsx at ${fmt(idleTsx, 1)} MiB`,
    );

    const c64 = verify.get(64);
    printTargets({
      verifyRatio:
        c64 &&
        ratio(c64.ours.count / c64.ours.seconds, c64.reference.count / c64.reference.seconds),
      oursP99: c64 && percentile(c64.ours.latenciesMs, 99),
      refP50: c64 && median(c64.reference.latenciesMs),
      oursCpu: c64 && perRequest(c64.ours.cpu?.server, c64.ours.count),
      settleRatio: ratio(
        settle.ours.count / settle.ours.seconds,
        settle.reference.count / settle.reference.seconds,
      ),
      // A floor with failed transfers measured no floor: no ratio.
      floorRatio:
        settle.floor.errors.length > 0
          ? undefined
          : ratio(
              settle.ours.count / settle.ours.seconds,
              settle.floor.count / settle.floor.seconds,
            ),
      coldRatio: ratio(coldOurs, coldBare),
      coldHttpRatio: ratio(coldOurs, medianOf(withHttp)),
      rss: Math.max(rssAfterVerify[0] ?? 0, rssAfterSettle[0] ?? 0) || undefined,
    });

    const problems = [
      ...settle.ours.problems.map((p) => `ours settle: exactly-once FAILED: ${p}`),
      ...settle.reference.problems.map((p) => `reference settle: exactly-once FAILED: ${p}`),
    ];
    // keep() records at least one sample for every list of errors that is not empty.
    const anyErrors = errors.samples.length > 0;
    console.log("");
    if (anyErrors || problems.length > 0) {
      for (const sample of errors.samples) console.error(`error ${sample}`);
      for (const problem of problems) console.error(problem);
    } else {
      console.log("no errors; every settled payment landed exactly once on chain");
    }
    console.log(`bench:compare took ${((performance.now() - started) / 1000).toFixed(0)} s`);
    if (stale) console.log(`bench: WARNING ${stale}`);
    return anyErrors || problems.length > 0 ? 1 : 0;
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    for (const server of servers) {
      const log = server.log().trim();
      if (log) console.error(`${server.name} stderr (tail):\n${log}`);
    }
    return 1;
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

process.exitCode = await main();
