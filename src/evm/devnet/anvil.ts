/** Starts and stops a local anvil node (the binary shipped by the @foundry-rs/anvil npm package). */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";

export interface AnvilOptions {
  /** Interface to listen on. Default "127.0.0.1". */
  host?: string;
  /** Port to listen on; 0 (the default) lets the OS pick a free one. */
  port?: number;
  /** Default 31337. */
  chainId?: number;
  /** With mining "auto": a heartbeat block is mined every this many seconds. Default 1. */
  blockTimeSeconds?: number;
  /** "auto" (default): each transaction mined at once, plus the heartbeat; "manual": evm_mine only. */
  mining?: "auto" | "manual";
}

export interface AnvilInstance {
  rpcUrl: string;
  host: string;
  port: number;
  chainId: number;
  /** The mining mode anvil was started with. */
  mining: "auto" | "manual";
  pid: number;
  /** Stops anvil (SIGTERM, then SIGKILL after 2 s). Safe to call more than once. */
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 20_000;
const KILL_GRACE_MS = 2_000;
/** How much of anvil's output is kept for error messages. */
const OUTPUT_TAIL_CHARS = 16_000;

/** Path of the anvil binary for this platform, from the @foundry-rs/anvil-<platform>-<arch> package. */
function anvilBinaryPath(): string {
  const require = createRequire(import.meta.url);
  // The platform packages name x64 "amd64" (e.g. @foundry-rs/anvil-linux-amd64).
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  let packageJson: string;
  try {
    packageJson = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(
      `anvil is not installed for ${process.platform}-${arch}: package ${pkg} not found ` +
        "(it is an optional dependency of @foundry-rs/anvil; run npm install)",
    );
  }
  const binary = process.platform === "win32" ? "anvil.exe" : "anvil";
  return path.join(path.dirname(packageJson), "bin", binary);
}

// Children still running, killed if this process exits without stopping them. One shared "exit"
// listener, not one per instance: many anvils would hit MaxListenersExceededWarning.
const liveChildren = new Set<ChildProcess>();

function killLiveChildren(): void {
  for (const child of liveChildren) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  liveChildren.clear();
}

function track(child: ChildProcess): void {
  if (liveChildren.size === 0) process.on("exit", killLiveChildren);
  liveChildren.add(child);
}

function untrack(child: ChildProcess): void {
  if (!liveChildren.delete(child)) return;
  if (liveChildren.size === 0) process.off("exit", killLiveChildren);
}

/** anvil's banner lists the dev accounts' private keys and mnemonic: never pass those on. */
function redact(output: string): string {
  return output
    .replace(/0x[0-9a-fA-F]{64}/g, "0x<redacted>")
    .replace(/^(Mnemonic:).*$/gm, "$1 <redacted>");
}

function urlHost(host: string): string {
  // A wildcard address is not something to connect to: use the loopback of the same family.
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  if (host.includes(":") && !host.startsWith("[")) return `[${host}]`;
  return host;
}

function checkInteger(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(
      `startAnvil: ${name} must be an integer in [${min}, ${max}], got ${value}`,
    );
  }
}

export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilInstance> {
  const host = options.host ?? "127.0.0.1";
  const requestedPort = options.port ?? 0;
  const chainId = options.chainId ?? 31337;
  const blockTimeSeconds = options.blockTimeSeconds ?? 1;
  const mining = options.mining ?? "auto";
  checkInteger("port", requestedPort, 0, 65535);
  checkInteger("chainId", chainId, 1, Number.MAX_SAFE_INTEGER);
  checkInteger("blockTimeSeconds", blockTimeSeconds, 1, 86_400);

  const args = ["--host", host, "--port", String(requestedPort), "--chain-id", String(chainId)];
  // "auto": automine each transaction, plus an interval block every N seconds on an idle chain.
  args.push(
    ...(mining === "auto"
      ? ["--mixed-mining", "--block-time", String(blockTimeSeconds)]
      : ["--no-mining"]),
  );

  const child = spawn(anvilBinaryPath(), args, { stdio: ["ignore", "pipe", "pipe"] });
  track(child);

  let output = "";
  let listening: (port: number) => void = () => undefined;
  const collect = (chunk: Buffer): void => {
    output += chunk.toString("utf8");
    if (output.length > 2 * OUTPUT_TAIL_CHARS) output = output.slice(-OUTPUT_TAIL_CHARS);
    const match = /Listening on (\S+):(\d+)/.exec(output);
    if (match) listening(Number(match[2]));
  };
  // Drain both pipes for anvil's whole life (a full pipe would block it); never echo them: the
  // output holds the dev accounts' private keys.
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);

  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    const onGone = (): void => {
      exited = true;
      untrack(child);
      resolve();
    };
    child.once("exit", onGone);
    // A spawn failure (e.g. ENOENT) emits "error" and never "exit".
    child.once("error", () => {
      if (child.pid === undefined) onGone();
    });
  });

  let stopPromise: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopPromise ??= (async () => {
      if (!exited) {
        child.kill("SIGTERM");
        const escalate = setTimeout(() => exited || child.kill("SIGKILL"), KILL_GRACE_MS);
        await exitPromise;
        clearTimeout(escalate);
      }
      child.stdout?.destroy();
      child.stderr?.destroy();
      untrack(child);
    })();
    return stopPromise;
  };

  const fail = (reason: string) =>
    new Error(`anvil ${reason}. Output:\n${redact(output).trim() || "(none)"}`.trimEnd());
  const waiting = new AbortController();
  const { signal } = waiting;
  let port: number;
  try {
    port = await Promise.race([
      new Promise<number>((resolve) => {
        listening = resolve;
      }),
      // "close" (not "exit"): it comes after the pipes are drained, so `output` is complete.
      once(child, "close", { signal }).then(
        ([code, exitSignal]) => {
          throw fail(`exited before it was ready (code ${code}, signal ${exitSignal})`);
        },
        (error: Error) => {
          throw fail(`could not be started: ${error.message}`);
        },
      ),
      delay(STARTUP_TIMEOUT_MS, undefined, { signal }).then(() => {
        throw fail(`did not report "Listening on" within ${STARTUP_TIMEOUT_MS / 1000} s`);
      }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    waiting.abort();
  }

  if (child.pid === undefined) {
    await stop();
    throw new Error("anvil started without a pid");
  }
  // From now on the output is only drained (discarded), never kept or shown.
  child.stdout?.off("data", collect).resume();
  child.stderr?.off("data", collect).resume();
  output = "";
  return {
    rpcUrl: `http://${urlHost(host)}:${port}`,
    host,
    port,
    chainId,
    mining,
    pid: child.pid,
    stop,
  };
}
