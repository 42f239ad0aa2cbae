/** What the benches share: settings from the environment, free ports, a clean environment. */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import type { Address } from "viem";
import { approvePermit2, type DevAccount, type Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { signUptoRequest } from "../src/evm/devnet/sign-upto.js";

/** A process and its live descendants (serve's worker is a child process), from /proc. */
export function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      readFileSync(`/proc/${pid}/task/${task}/children`, "utf8")
        .split(" ")
        .filter(Boolean)
        .map(Number),
    );
  } catch {
    // Gone meanwhile.
  }
  return [pid, ...children.flatMap(processTree)];
}

/**
 * CPU time (user + system, all threads) a live process and its descendants have used so far, in
 * ms, those that exited included; undefined without /proc.
 */
export function cpuMs(pid: number): number | undefined {
  let total = 0;
  for (const [i, each] of processTree(pid).entries()) {
    try {
      const stat = readFileSync(`/proc/${each}/stat`, "utf8");
      // After "(comm)": utime is field 14, stime 15, cutime 16, cstime 17, in ticks (USER_HZ, 100).
      const fields = stat
        .slice(stat.lastIndexOf(")") + 2)
        .split(" ")
        .map(Number);
      total += ((fields[11] ?? 0) + (fields[12] ?? 0) + (fields[13] ?? 0) + (fields[14] ?? 0)) * 10;
    } catch {
      if (i === 0) return undefined;
    }
  }
  return total;
}

/**
 * Resident memory (kB, now or at its peak) of a process and its descendants, as the machine holds
 * it: each one's own pages, and the file-backed ones (the node binary, shared libraries: the same
 * files in each) once, the largest count of them. undefined without /proc.
 */
export function treeStatusKb(pid: number, name: "VmRSS" | "VmHWM"): number | undefined {
  let own = 0;
  let files = 0;
  for (const [i, each] of processTree(pid).entries()) {
    try {
      const status = readFileSync(`/proc/${each}/status`, "utf8");
      const kb = (field: string) =>
        Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
      own += kb(name) - kb("RssFile");
      files = Math.max(files, kb("RssFile"));
    } catch {
      if (i === 0) return undefined;
    }
  }
  return own + files;
}

/** Nearest-rank percentile of unsorted values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** Keeps the last few kB of a stream, for error messages. */
export function tail(stream: NodeJS.ReadableStream | null | undefined): () => string {
  let text = "";
  stream?.setEncoding("utf8");
  stream?.on("data", (chunk: string) => {
    text = (text + chunk).slice(-4_000);
  });
  return () => text;
}

/**
 * The URL `facilitator serve` names in its JSON `listening` line on stderr (`log`, from tail()),
 * once it does; rejects with that stderr when the process exits first.
 */
export function servedUrl(child: ChildProcess, log: () => string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /"event":"listening","url":"([^"]+)"/.exec(log());
      if (match?.[1]) {
        clearInterval(timer);
        resolve(match[1]);
      }
    }, 5);
    child.once("exit", (code) => {
      clearInterval(timer);
      reject(new Error(`serve exited (${code}):\n${log()}`));
    });
  });
}

/**
 * The URL a child server prints as `listening <url>` on stdout, once it does; rejects, with the
 * end of its stderr (`log`), when it exits first or stays silent for `timeoutMs`.
 */
export function urlOnStdout(
  child: ChildProcess,
  what: string,
  log: () => string,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    const timer = setTimeout(() => {
      reject(new Error(`${what} did not listen within ${timeoutMs} ms:\n${log()}`));
    }, timeoutMs);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (stdout.length < 4_000) stdout += chunk;
      const match = /listening (http:\/\/\S+)/.exec(stdout);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}):\n${log()}`));
    });
  });
}

/** A positive number from the environment, or the fallback. */
export function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A port the OS says is free right now (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error("no port from the OS"))));
    });
  });
}

/** The environment without FACILITATOR_* so no local config leaks into a server. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !key.startsWith("FACILITATOR_")),
    ),
    // The servers' settlement-key locks go with the bench, not into the user's state directory.
    FACILITATOR_LOCK_DIR: BENCH_LOCKS,
  };
}

const BENCH_LOCKS = path.join(os.tmpdir(), `facilitator-bench-locks-${process.pid}`);

/** How long a stopped server gets to finish before it is killed. */
const STOP_GRACE_MS = 5_000;

export const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** SIGTERM, then SIGKILL if the child has not exited within the grace period. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await gone;
  clearTimeout(timer);
}

/**
 * BENCH_METHOD: "eip3009" (default: test USDC), "permit2" (the devnet's EIP-2612 token through
 * Permit2) or "upto" (the same token through the upto proxy, charging the full maximum); for the
 * last two every payer approves Permit2 first. `sign` makes one request body.
 */
export async function benchMethod(chain: Devnet): Promise<{
  name: string;
  token: Address;
  sign: (payer: DevAccount, amount: bigint) => Promise<object>;
}> {
  const name = process.env.BENCH_METHOD ?? "eip3009";
  if (name === "eip3009") {
    return {
      name,
      token: chain.token.address,
      sign: (payer, amount) => signSampleRequest(chain, { payer, amount }),
    };
  }
  if (name !== "permit2" && name !== "upto") {
    throw new Error(`BENCH_METHOD must be eip3009, permit2 or upto, got ${name}`);
  }
  for (const payer of chain.payers) await approvePermit2(chain, payer, chain.permitToken.address);
  return {
    name,
    token: chain.permitToken.address,
    sign: (payer, amount) =>
      name === "upto"
        ? signUptoRequest(chain, payer, amount)
        : signSampleRequest(chain, { payer, amount, method: "permit2", asset: "permit" }),
  };
}

/** A POST answered: status (0: no answer), time taken, the JSON body, the raw text. */
export interface Answer {
  readonly status: number;
  readonly ms: number;
  readonly body?: { success?: unknown; transactionHash?: unknown };
  readonly error?: string;
  readonly text?: string;
}

/** POSTs a JSON `body` to `url` and times the answer; never throws. */
export async function post(url: string, body: string, timeoutMs: number): Promise<Answer> {
  const sent = performance.now();
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    const ms = performance.now() - sent;
    try {
      return { status: response.status, ms, text, body: JSON.parse(text) as Answer["body"] };
    } catch {
      return {
        status: response.status,
        ms,
        text,
        error: `${response.status} ${text.slice(0, 200)}`,
      };
    }
  } catch (error) {
    const ms = performance.now() - sent;
    return {
      status: 0,
      ms,
      error: error instanceof Error ? `${error.name}: ${error.message}` : "?",
    };
  }
}

/**
 * `facilitator serve`'s arguments as the benches start it: on loopback at `port`, quiet, its RPC
 * and journal given, settling from `keyFile` when there is one; `more` goes before --quiet. The
 * rate of settlements per payer and payee is off: a bench pays one payee from a few payers as
 * fast as it can, which is what it measures.
 */
export function serveArgs(options: {
  readonly port: number;
  readonly rpcUrl: string;
  readonly journal: string;
  readonly keyFile?: string | undefined;
  readonly more?: readonly string[] | undefined;
}): string[] {
  return [
    "serve",
    "--host",
    "127.0.0.1",
    "--port",
    String(options.port),
    "--rpc-url",
    options.rpcUrl,
    ...(options.keyFile ? ["--private-key-file", options.keyFile] : []),
    "--journal",
    options.journal,
    "--rate-per-payer",
    "0",
    ...(options.more ?? []),
    "--quiet",
  ];
}
