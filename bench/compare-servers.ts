/**
 * bench:compare's child processes: our `serve` and the reference server, each tracked and killed
 * if the bench exits, with their CPU and peak memory read from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Hex } from "viem";
import {
  cleanEnv,
  cpuMs,
  exited,
  freePort,
  serveArgs,
  tail,
  treeStatusKb,
  urlOnStdout,
} from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const READY_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked, stopped at the end, and killed if this process exits.

export const children = new Set<ChildProcess>();
/** Set on SIGINT/SIGTERM: load loops stop issuing requests. */
export const state = { interrupting: false };

function killAllNow(): void {
  for (const child of children) {
    if (!exited(child)) child.kill("SIGKILL");
  }
}
process.on("exit", killAllNow);

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly log: () => string;
}

/** `node bin/facilitator.js serve` on a free port; ready once GET /llms.txt answers. */
export async function startOurs(rpcUrl: string, keyFile: string, journal: string): Promise<Server> {
  const port = await freePort();
  const child = track(
    spawn(
      process.execPath,
      [path.join(ROOT, "bin/facilitator.js"), ...serveArgs({ port, rpcUrl, journal, keyFile })],
      { cwd: ROOT, env: cleanEnv(), stdio: ["ignore", "ignore", "pipe"] },
    ),
  );
  const log = tail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`facilitator serve exited early:\n${log()}`);
    try {
      const response = await fetch(`${url}/llms.txt`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok && child.pid !== undefined) {
        return { name: "ours", child, pid: child.pid, url, log };
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`facilitator serve did not listen within ${READY_TIMEOUT_MS} ms:\n${log()}`);
}

/**
 * bench/reference-server.ts under tsx (`node --import tsx`, so the pid is the server itself and
 * its memory is the server's); ready once it prints its URL on stdout.
 */
export async function startReference(rpcUrl: string, key: Hex): Promise<Server> {
  const child = track(
    spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/reference-server.ts")], {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        REFERENCE_RPC_URL: rpcUrl,
        REFERENCE_PRIVATE_KEY: key,
        REFERENCE_PORT: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const log = tail(child.stderr);
  const url = await urlOnStdout(child, "reference server", log, READY_TIMEOUT_MS);
  if (child.pid === undefined) throw new Error(`reference server has no pid:\n${log()}`);
  return { name: "reference", child, pid: child.pid, url, log };
}

/**
 * VmHWM (peak resident set) of a live process and its children, in MiB; undefined without /proc.
 * Summed: each one's peak, whenever it came (an upper bound of the tree's).
 */
export function peakRssMiB(pid: number): number | undefined {
  const kb = treeStatusKb(pid, "VmHWM");
  return kb === undefined ? undefined : kb / 1024;
}

export interface Cpu {
  /** CPU ms the server, anvil and this process (the load generator) used during a round. */
  readonly server?: number | undefined;
  readonly anvil?: number | undefined;
  readonly client: number;
}

export function cpuMeter(serverPid: number, anvilPid: number): () => Cpu {
  const server = cpuMs(serverPid);
  const anvil = cpuMs(anvilPid);
  const client = process.cpuUsage();
  return () => {
    const serverAfter = cpuMs(serverPid);
    const anvilAfter = cpuMs(anvilPid);
    const used = process.cpuUsage(client);
    return {
      server: server === undefined || serverAfter === undefined ? undefined : serverAfter - server,
      anvil: anvil === undefined || anvilAfter === undefined ? undefined : anvilAfter - anvil,
      client: (used.user + used.system) / 1000,
    };
  };
}

export const perRequest = (total: number | undefined, count: number) =>
  total === undefined || count === 0 ? undefined : total / count;
