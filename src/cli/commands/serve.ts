/**
 * `facilitator serve`: the same core over HTTP. Binds 127.0.0.1 unless told otherwise, logs one
 * JSON line per request on stderr, and on SIGINT/SIGTERM lets settles in flight answer first.
 */
import { readFileSync } from "node:fs";
import chalk from "chalk";
import { caip2 } from "../../chain/networks.js";
import { useWasmSecp256k1 } from "../../chain/secp256k1.js";
import { createHandler } from "../../http/handler.js";
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_INFLIGHT_BYTES } from "../../http/limits.js";
import { startServer } from "../../http/server.js";
import { type ConfigFlags, loadConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { facilitatorFrom } from "../facilitator.js";

export interface ServeFlags extends ConfigFlags {
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  readonly apiKeyFile?: string | undefined;
  readonly bodyLimit?: string | undefined;
  readonly maxConnections?: string | undefined;
  readonly maxInflightBytes?: string | undefined;
  readonly quiet?: boolean | undefined;
}

function readApiKey(flags: ServeFlags): string | undefined {
  if (flags.apiKeyFile) {
    let key: string;
    try {
      key = readFileSync(flags.apiKeyFile, "utf8").trim();
    } catch (error) {
      throw new UsageError(
        `cannot read --api-key-file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`,
      );
    }
    if (!key) throw new UsageError("--api-key-file is empty");
    return key;
  }
  const fromEnv = process.env.FACILITATOR_API_KEY?.trim();
  return fromEnv || undefined;
}

function whole(value: string | undefined, flag: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > max)
    throw new UsageError(`${flag} must be a whole number up to ${max}`);
  return n;
}

/**
 * Runs the server in this thread until `stopped` resolves. `bannerOnTty` says whether the
 * process's stderr is a terminal (a worker's own stderr is a pipe to its parent).
 */
export async function serveHere(
  flags: ServeFlags,
  options: { bannerOnTty: boolean; stopped: Promise<void> },
): Promise<number> {
  const config = loadConfig(flags);
  const apiKey = readApiKey(flags);
  const port = whole(flags.port, "--port", 4020, 65535);
  const bodyLimitBytes = whole(flags.bodyLimit, "--body-limit", 64 * 1024, 16 * 1024 * 1024);
  const maxConnections = whole(
    flags.maxConnections,
    "--max-connections",
    DEFAULT_MAX_CONNECTIONS,
    1_000_000,
  );
  const maxInflightBytes = whole(
    flags.maxInflightBytes,
    "--max-inflight-bytes",
    DEFAULT_MAX_INFLIGHT_BYTES,
    Number.MAX_SAFE_INTEGER,
  );
  const facilitator = await facilitatorFrom(config, true);
  // A server recovers many signatures: load the faster recovery once, up front.
  await useWasmSecp256k1();
  const log = flags.quiet
    ? undefined
    : (entry: Record<string, unknown>) => process.stderr.write(`${JSON.stringify(entry)}\n`);
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(createHandler(facilitator, { apiKey }), {
      host: flags.host ?? "127.0.0.1",
      port,
      bodyLimitBytes,
      maxConnections,
      maxInflightBytes,
      log,
    });
  } catch (error) {
    throw new UsageError(
      `cannot listen on ${flags.host ?? "127.0.0.1"}:${port}: ${(error as Error).message}`,
    );
  }

  if (!flags.quiet && options.bannerOnTty) {
    const endpoints = await facilitator.rpc.endpoints();
    const networks = endpoints.map(
      (e) =>
        `${e.chainId === undefined ? chalk.red("unreachable") : caip2(e.chainId)} via ${e.url}`,
    );
    process.stderr.write(
      [
        `${chalk.green("●")} ${chalk.bold("facilitator serve")} listening on ${chalk.bold(server.url)}`,
        `  networks  ${networks.length ? networks.join("\n            ") : chalk.dim("public default RPCs (none configured)")}`,
        `  signers   ${facilitator.signers.size > 0 ? facilitator.signers.addresses.join(", ") : chalk.yellow("none: /settle answers settlement_failed")}`,
        `  journal   ${facilitator.journal.path ?? "in memory"}`,
        `  auth      ${apiKey ? "API key required on /verify and /settle" : chalk.dim("none")}`,
        `  docs      ${server.url}/llms.txt`,
        "",
      ].join("\n"),
    );
  } else if (!flags.quiet) {
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), event: "listening", url: server.url, signers: facilitator.signers.addresses, journal: facilitator.journal.path })}\n`,
    );
  }

  await options.stopped;
  await server.close();
  return 0;
}

/** Heap limits for the serving thread: V8 grows a busy heap far past what it keeps alive. */
const SERVE_HEAP = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 };

/**
 * `facilitator serve`: the server runs in a worker thread with a bounded heap (peak RSS under load
 * about 120 MiB instead of 150-180 MiB, same throughput); this thread forwards SIGINT/SIGTERM so
 * requests in flight still finish, and returns the worker's exit status.
 */
export async function runServe(flags: ServeFlags): Promise<number> {
  const { Worker } = await import("node:worker_threads");
  const worker = new Worker(new URL("./serve-worker.js", import.meta.url), {
    workerData: { flags, bannerOnTty: process.stderr.isTTY === true },
    resourceLimits: SERVE_HEAP,
  });
  const stop = () => worker.postMessage({ type: "stop" });
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  let usage: string | undefined;
  worker.on("message", (message: { type?: string; message?: string }) => {
    if (message.type === "usage") usage = message.message;
  });
  const code = await new Promise<number>((resolve) => {
    worker.on("error", (error) => {
      process.stderr.write(`facilitator: the server stopped: ${error.message}\n`);
      resolve(3);
    });
    worker.on("exit", (exitCode) => resolve(exitCode));
  });
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
  if (usage !== undefined) throw new UsageError(usage);
  return code;
}
