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

export async function coldCli(
  rpcUrl: string,
  requestFile: string,
  bareScript: string,
  runs: number,
) {
  const ours = [path.join(ROOT, "bin/facilitator.js"), "verify", requestFile, "--rpc-url", rpcUrl];
  const oursCheck = (stdout: string) => {
    try {
      return (JSON.parse(stdout) as { success?: unknown }).success === true;
    } catch {
      return false;
    }
  };
  const bare = [bareScript, rpcUrl];
  const bareCheck = (stdout: string) => stdout.startsWith("0x");
  // One untimed run of each first: disk cache and node's compile cache, as for any repeated use.
  const oursMs: number[] = [];
  const bareMs: number[] = [];
  const oursErrors: string[] = [];
  const bareErrors: string[] = [];
  const warmOurs = await timedRun([...ours, "-q"], oursCheck);
  const warmBare = await timedRun(bare, bareCheck);
  if (warmOurs.error) oursErrors.push(`warm-up: ${warmOurs.error}`);
  if (warmBare.error) bareErrors.push(`warm-up: ${warmBare.error}`);
  for (let i = 0; i < runs && !state.interrupting; i++) {
    let o: Timed;
    let b: Timed;
    if (i % 2 === 0) {
      o = await timedRun([...ours, "-q"], oursCheck);
      b = await timedRun(bare, bareCheck);
    } else {
      b = await timedRun(bare, bareCheck);
      o = await timedRun([...ours, "-q"], oursCheck);
    }
    // A failed run says nothing about start-up time: it is counted as an error, not timed.
    if (o.error) oursErrors.push(o.error);
    else oursMs.push(o.ms);
    if (b.error) bareErrors.push(b.error);
    else bareMs.push(b.ms);
  }
  return { oursMs, bareMs, oursErrors, bareErrors };
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
