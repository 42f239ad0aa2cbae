/**
 * Configuration for the CLI: flags, then environment, then an optional JSON config file.
 * The settlement key is read from the environment or a file, never from a flag's value, and is
 * never echoed, not even in an error message.
 */
import { readFileSync } from "node:fs";
import type { Hex } from "viem";
import { UsageError } from "./errors.js";

export interface ConfigFlags {
  readonly rpcUrl?: string[] | undefined;
  readonly privateKeyFile?: string | undefined;
  readonly config?: string | undefined;
  readonly confirmTimeout?: string | undefined;
}

export interface CliConfig {
  readonly rpcUrls: string[];
  /** Loaded only when the command needs to sign. */
  readonly loadPrivateKey: () => Hex | undefined;
  readonly confirmTimeoutMs: number;
}

interface ConfigFile {
  rpcUrls?: unknown;
  privateKeyFile?: unknown;
  confirmTimeoutSeconds?: unknown;
}

function readConfigFile(path: string | undefined): ConfigFile {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new Error("expected a JSON object");
    }
    return parsed as ConfigFile;
  } catch (error) {
    // JSON.parse's message quotes the start of the text: never echo a file that may hold a key.
    const why = error instanceof SyntaxError ? "not JSON" : (error as Error).message;
    throw new UsageError(`config file ${path} is not valid: ${why}`);
  }
}

function splitUrls(value: string): string[] {
  return value
    .split(",")
    .map((url) => url.trim())
    .filter(Boolean);
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`not a valid RPC URL: ${url.slice(0, 80)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new UsageError(`RPC URLs must be http(s); got ${parsed.protocol}`);
  }
  return url;
}

function parseSeconds(value: unknown, source: string): number {
  const seconds = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`${source} must be a positive number of seconds`);
  }
  return Math.round(seconds * 1000);
}

export function readPrivateKey(text: string, source: string): Hex {
  const key = text.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(key)) {
    throw new UsageError(`the private key from ${source} is not 32 bytes of hex`);
  }
  return (key.startsWith("0x") ? key : `0x${key}`) as Hex;
}

function readKeyFile(path: string, source: string): Hex {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UsageError(`cannot read the private key file from ${source} (${code})`);
  }
  return readPrivateKey(text, source);
}

export function loadConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv = process.env): CliConfig {
  const file = readConfigFile(flags.config ?? env.FACILITATOR_CONFIG);

  let rpcUrls: string[];
  if (flags.rpcUrl && flags.rpcUrl.length > 0) rpcUrls = flags.rpcUrl.flatMap(splitUrls);
  else if (env.FACILITATOR_RPC_URL) rpcUrls = splitUrls(env.FACILITATOR_RPC_URL);
  else if (Array.isArray(file.rpcUrls)) rpcUrls = file.rpcUrls.map(String);
  else rpcUrls = [];
  rpcUrls.forEach(checkUrl);

  const confirmTimeoutMs =
    flags.confirmTimeout !== undefined
      ? parseSeconds(flags.confirmTimeout, "--confirm-timeout")
      : env.FACILITATOR_CONFIRM_TIMEOUT
        ? parseSeconds(env.FACILITATOR_CONFIRM_TIMEOUT, "FACILITATOR_CONFIRM_TIMEOUT")
        : file.confirmTimeoutSeconds !== undefined
          ? parseSeconds(file.confirmTimeoutSeconds, "confirmTimeoutSeconds in the config file")
          : 60_000;

  const loadPrivateKey = (): Hex | undefined => {
    if (flags.privateKeyFile) return readKeyFile(flags.privateKeyFile, "--private-key-file");
    if (env.FACILITATOR_PRIVATE_KEY) {
      return readPrivateKey(env.FACILITATOR_PRIVATE_KEY, "FACILITATOR_PRIVATE_KEY");
    }
    if (env.FACILITATOR_PRIVATE_KEY_FILE) {
      return readKeyFile(env.FACILITATOR_PRIVATE_KEY_FILE, "FACILITATOR_PRIVATE_KEY_FILE");
    }
    if (typeof file.privateKeyFile === "string") {
      return readKeyFile(file.privateKeyFile, "privateKeyFile in the config file");
    }
    return undefined;
  };

  return { rpcUrls, loadPrivateKey, confirmTimeoutMs };
}
