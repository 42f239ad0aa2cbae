/**
 * bench:compare's cold start: `facilitator verify` from a fresh process against a bare node
 * process that makes one RPC call, alternating, and the peak memory of an idle node.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { state, track } from "./compare-servers.js";
import { cleanEnv, tail } from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const COLD_TIMEOUT_MS = 30_000;

export interface Timed {
  readonly ms: number;
  readonly error?: string;
}

export function timedRun(
  args: readonly string[],
  check: (stdout: string) => boolean,
): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = track(
      spawn(process.execPath, args, {
        cwd: ROOT,
        env: cleanEnv(),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    let stdout = "";
    const stderr = tail(child.stderr);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (stdout.length < 16_000) stdout += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), COLD_TIMEOUT_MS);
    child.once("exit", (code, signal) => {
      const ms = performance.now() - started;
      clearTimeout(timer);
      if (code === 0 && check(stdout)) resolve({ ms });
      else {
        const output = `${stdout.trim().slice(0, 200)} ${stderr().slice(-300)}`.replace(
          /\s+/g,
          " ",
        );
        const why = `exit ${code ?? signal}: ${output}`;
        resolve({ ms, error: why });
      }
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, error: error.message });
    });
  });
}

/** One eth_chainId over fetch: the floor of any node process that asks a chain something. */
export const BARE_NODE_SCRIPT = `
const url = process.argv[2];
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
});
const answer = await response.json();
if (typeof answer.result !== "string") process.exit(1);
console.log(answer.result);
`;

/**
 * The same call over node:http, which loads less than fetch (undici and its web streams): the
 * lowest floor a node process that asks a chain something has.
 */
export const BARE_HTTP_SCRIPT = `
import http from "node:http";
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
const answer = await new Promise((resolve, reject) => {
  const request = http.request(process.argv[2], { method: "POST", headers: { "content-type": "application/json", "content-length": body.length } }, (response) => {
    let text = "";
    response.setEncoding("utf8");
    response.on("data", (chunk) => (text += chunk));
    response.on("end", () => resolve(JSON.parse(text)));
  });
  request.on("error", reject);
  request.end(body);
});
if (typeof answer.result !== "string") process.exit(1);
console.log(answer.result);
`;

export interface ColdRuns {
  readonly ms: number[];
  readonly errors: string[];
}

/**
 * Wall times of our cold verify and of each bare script, `runs` times each, the order rotating
 * every run, after one untimed run of each (disk cache and node's compile cache, as for any
 * repeated use). A failed run says nothing about start-up time: it counts as an error, not a time.
 */
export async function coldCli(
  rpcUrl: string,
  requestFile: string,
  bareScripts: readonly string[],
  runs: number,
): Promise<{ ours: ColdRuns; bare: ColdRuns[] }> {
  const oursCheck = (stdout: string) => {
    try {
      return (JSON.parse(stdout) as { success?: unknown }).success === true;
    } catch {
      return false;
    }
  };
  const bareCheck = (stdout: string) => stdout.startsWith("0x");
  const contestants = [
    {
      args: [
        path.join(ROOT, "bin/facilitator.js"),
        "verify",
        requestFile,
        "--rpc-url",
        rpcUrl,
        "-q",
      ],
      check: oursCheck,
    },
    ...bareScripts.map((script) => ({ args: [script, rpcUrl], check: bareCheck })),
  ];
  const results: ColdRuns[] = contestants.map(() => ({ ms: [], errors: [] }));
  for (const [i, c] of contestants.entries()) {
    const warm = await timedRun(c.args, c.check);
    if (warm.error) results[i]?.errors.push(`warm-up: ${warm.error}`);
  }
  for (let run = 0; run < runs && !state.interrupting; run++) {
    for (let k = 0; k < contestants.length; k++) {
      const i = (run + k) % contestants.length;
      const c = contestants[i] as (typeof contestants)[number];
      const timed = await timedRun(c.args, c.check);
      if (timed.error) results[i]?.errors.push(timed.error);
      else results[i]?.ms.push(timed.ms);
    }
  }
  const [ours, ...bare] = results as [ColdRuns, ...ColdRuns[]];
  return { ours, bare };
}

/** Peak RSS of a node process that loads nothing (with `flags`), for the memory note. */
export async function idlePeakRssMiB(flags: readonly string[]): Promise<number | undefined> {
  const script =
    "setTimeout(() => { const s = require('node:fs').readFileSync('/proc/self/status', 'utf8');" +
    " console.log(/^VmHWM:\\s+(\\d+) kB/m.exec(s)?.[1] ?? ''); }, 300);";
  let kb: number | undefined;
  const run = await timedRun([...flags, "-e", script], (stdout) => {
    kb = Number(stdout.trim()) || undefined;
    return true;
  });
  return run.error || kb === undefined ? undefined : kb / 1024;
}
