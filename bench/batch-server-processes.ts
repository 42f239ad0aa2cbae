/**
 * The two facilitators bench:batch measures, each started as a child process on a free port and
 * ready to serve: our `facilitator serve` (the built dist), and the official x402 facilitator
 * (bench/batch-official-facilitator.ts, run through bench/batch.ts). Children are killed if this
 * process exits without stopping them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { DevAccount } from "../src/evm/devnet/index.js";
import type { RpcCounter } from "./batch-rpc-proxy.js";
import { cleanEnv, exited, freePort, serveArgs, tail, urlOnStdout } from "./lib.js";
import { ROOT } from "./settle-lib.js";

const READY_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Child processes: tracked, and killed if this process exits without stopping them.

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) if (!exited(child)) child.kill("SIGKILL");
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// The two servers.

export interface Target {
  readonly name: "ours" | "official";
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly rpc: RpcCounter;
  readonly log: () => string;
}

/**
 * `facilitator serve` (the built dist) on a free port, its RPC through `rpc`, settling from the
 * key in `keyFile`, the receiver authorizer's key in its environment (never on the command line,
 * never printed), its journal and state under `dir`. Ready once /supported lists
 * batch-settlement with that authorizer.
 */
export async function startOurs(options: {
  readonly rpc: RpcCounter;
  readonly keyFile: string;
  readonly authorizer: DevAccount;
  /** The payee the channels pay: serve offers its receiver authorizer once a key names it. */
  readonly seller: string;
  readonly dir: string;
}): Promise<Target> {
  const port = await freePort();
  const apiKeys = path.join(options.dir, "api-keys.json");
  writeFileSync(
    apiKeys,
    JSON.stringify({
      anonymous: true,
      keys: [
        { name: "bench seller", key: randomBytes(24).toString("hex"), receivers: [options.seller] },
      ],
    }),
    { mode: 0o600 },
  );
  const child = track(
    spawn(
      process.execPath,
      [
        path.join(ROOT, "bin/facilitator.js"),
        ...serveArgs({
          port,
          rpcUrl: options.rpc.url,
          keyFile: options.keyFile,
          journal: path.join(options.dir, "journal.jsonl"),
          more: ["--confirm-timeout", "60"],
        }),
      ],
      {
        cwd: ROOT,
        env: {
          ...cleanEnv(),
          // Nothing of the bench goes to the user's state directory.
          XDG_STATE_HOME: options.dir,
          FORCE_COLOR: "0",
          FACILITATOR_RECEIVER_AUTHORIZER_KEY: options.authorizer.privateKey,
          FACILITATOR_API_KEYS_FILE: apiKeys,
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    ),
  );
  const log = tail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = "";
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`facilitator serve exited early:\n${log()}`);
    try {
      const response = await fetch(`${url}/supported`, { signal: AbortSignal.timeout(2_000) });
      const supported = (await response.json()) as {
        kinds?: { scheme?: string; extra?: { receiverAuthorizer?: string } }[];
      };
      const kind = supported.kinds?.find((k) => k.scheme === "batch-settlement");
      const advertised = kind?.extra?.receiverAuthorizer?.toLowerCase();
      if (advertised === options.authorizer.address.toLowerCase() && child.pid !== undefined) {
        return { name: "ours", child, pid: child.pid, url, rpc: options.rpc, log };
      }
      last = `/supported lists batch-settlement with receiverAuthorizer ${advertised}`;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(
    `facilitator serve was not ready within ${READY_TIMEOUT_MS} ms (${last}):\n${log()}`,
  );
}

/**
 * The official facilitator in its own process (`runOfficialServer` of
 * bench/batch-official-facilitator.ts, started through bench/batch.ts with
 * BENCH_BATCH_ROLE=official), its RPC through `rpc`.
 */
export async function startOfficial(options: {
  readonly script: string;
  readonly rpc: RpcCounter;
  readonly relayer: DevAccount;
  readonly authorizer: DevAccount;
}): Promise<Target> {
  const child = track(
    spawn(process.execPath, ["--import", "tsx", options.script], {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        BENCH_BATCH_ROLE: "official",
        OFFICIAL_RPC_URL: options.rpc.url,
        OFFICIAL_RELAYER_KEY: options.relayer.privateKey,
        OFFICIAL_AUTHORIZER_KEY: options.authorizer.privateKey,
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const log = tail(child.stderr);
  const url = await urlOnStdout(child, "official server", log, READY_TIMEOUT_MS);
  if (child.pid === undefined) throw new Error(`official server has no pid:\n${log()}`);
  return { name: "official", child, pid: child.pid, url, rpc: options.rpc, log };
}
