/**
 * `facilitator serve`: the same core over HTTP. Binds 127.0.0.1 unless told otherwise, logs one
 * JSON line per request on stderr, and on SIGINT/SIGTERM lets settles in flight answer first.
 */
import { readFileSync } from "node:fs";
import chalk from "chalk";
import { caip2 } from "../../chain/networks.js";
import { useWasmSecp256k1 } from "../../chain/secp256k1.js";
import { createHandler } from "../../http/handler.js";
import { startServer } from "../../http/server.js";
import { type ConfigFlags, loadConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { facilitatorFrom } from "../facilitator.js";

export interface ServeFlags extends ConfigFlags {
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  readonly apiKeyFile?: string | undefined;
  readonly bodyLimit?: string | undefined;
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

export async function runServe(flags: ServeFlags): Promise<number> {
  const config = loadConfig(flags);
  const apiKey = readApiKey(flags);
  const port = whole(flags.port, "--port", 4020, 65535);
  const bodyLimitBytes = whole(flags.bodyLimit, "--body-limit", 64 * 1024, 16 * 1024 * 1024);
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
      log,
    });
  } catch (error) {
    throw new UsageError(
      `cannot listen on ${flags.host ?? "127.0.0.1"}:${port}: ${(error as Error).message}`,
    );
  }

  if (!flags.quiet && process.stderr.isTTY) {
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

  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await server.close();
  return 0;
}
