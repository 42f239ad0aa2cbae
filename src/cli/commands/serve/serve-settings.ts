/** serve's settings: flags, environment and files read once by the supervisor, for the worker. */
import type { Hex } from "viem";
import { DEFAULT_MAX_CONNECTIONS, defaultPerClient } from "../../../http/connections.js";
import { hostOf } from "../../../http/hosts.js";
import { DEFAULT_MAX_INFLIGHT_BYTES } from "../../../http/limits.js";
import { UsageError, wholeFlag } from "../../io/errors.js";
import { readApiKeys } from "../../settings/api-keys.js";
import { type ConfigFlags, loadConfig } from "../../settings/config.js";
import { loadApiKey, receiverAuthorizerOf } from "../../settings/config-keys.js";
import { readDenyList } from "../../settings/deny-list-file.js";
import { resolveSetting } from "../../settings/setting-resolver.js";
import { SETTINGS } from "../../settings/settings.js";

export interface ServeFlags extends ConfigFlags {
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  readonly allowedHost?: string[] | undefined;
  readonly bodyLimit?: string | undefined;
  readonly maxConnections?: string | undefined;
  readonly maxConnectionsPerClient?: string | undefined;
  readonly maxInflightBytes?: string | undefined;
  readonly maxHeap?: string | undefined;
  readonly quiet?: boolean | undefined;
}

/** Heap of the serving worker: V8 grows a busy heap far past what it keeps alive. */
const DEFAULT_MAX_HEAP_MB = 96;

/** A flag's whole number from `min` to `max`, `fallback` when not given. */
function whole(value: string | undefined, flag: string, [fallback, max, min = 0]: number[]) {
  const n = value === undefined ? (fallback as number) : wholeFlag(value, flag, max as number);
  if (n < min) throw new UsageError(`${flag} must be at least ${min}`);
  return n;
}

/** What the serving worker needs, resolved once: a key from a pipe can be read only once. */
export type ServeSettings = ReturnType<typeof resolveServe> & {
  /** The PostgreSQL store's owner name: the supervisor's, so a restarted worker keeps its claims. */
  readonly storeOwner?: string | undefined;
};

/** Flags, environment and files → settings; every usage error surfaces here, before any thread. */
export function resolveServe(flags: ServeFlags) {
  const {
    loadPrivateKey: _one,
    loadPrivateKeys,
    loadReceiverAuthorizerKey,
    loadSvmFeePayers,
    ...config
  } = loadConfig(flags);
  const privateKeys = loadPrivateKeys();
  const receiverAuthorizerKey = loadReceiverAuthorizerKey();
  // Refused here, before any thread starts, when it is also a settlement key.
  receiverAuthorizerOf(receiverAuthorizerKey, privateKeys);
  // A bad deny list too: the serving worker reads it again, and again when it changes.
  if (config.denyList !== undefined) readDenyList(config.denyList);
  const allowedHosts: readonly string[] = flags.allowedHost ?? [];
  for (const name of allowedHosts) {
    if (!hostOf(name.startsWith("*.") ? name.slice(2) : name)) {
      throw new UsageError(`--allowed-host ${name.slice(0, 100)} is not a host name or address`);
    }
  }
  const bodyLimitBytes = whole(flags.bodyLimit, "--body-limit", [64 * 1024, 16 * 1024 * 1024]);
  const maxInflightBytes = whole(flags.maxInflightBytes, "--max-inflight-bytes", [
    Math.max(DEFAULT_MAX_INFLIGHT_BYTES, bodyLimitBytes),
    Number.MAX_SAFE_INTEGER,
  ]);
  // Below the body limit, a body of the largest accepted size could never be served.
  if (maxInflightBytes < bodyLimitBytes) {
    throw new UsageError("--max-inflight-bytes must be at least --body-limit");
  }
  const maxConnections = whole(flags.maxConnections, "--max-connections", [
    DEFAULT_MAX_CONNECTIONS,
    1_000_000,
    1,
  ]);
  const sources = { flags, env: process.env };
  return {
    host: flags.host ?? "127.0.0.1",
    port: whole(flags.port, "--port", [4020, 65535]),
    bodyLimitBytes,
    maxConnections,
    // Above --max-connections it is no share at all: one address may use every place.
    maxConnectionsPerClient: whole(flags.maxConnectionsPerClient, "--max-connections-per-client", [
      defaultPerClient(maxConnections),
      1_000_000,
      1,
    ]),
    maxInflightBytes,
    allowedHosts,
    /** Old-generation heap of the serving worker, MiB. */
    maxHeapMb: whole(flags.maxHeap, "--max-heap", [DEFAULT_MAX_HEAP_MB, 65536, 1]),
    apiKey: loadApiKey(sources),
    /** Named API keys, each with the sellers it may act for; their file is re-read on change. */
    apiKeys: readApiKeys(sources),
    apiKeysFile: resolveSetting(SETTINGS.apiKeysFile, sources),
    /** The configuration without its key loaders: what can cross to the serving worker. */
    config,
    privateKeys: privateKeys as readonly Hex[],
    /** The receiver authorizer's key (never a settlement key), if configured. */
    receiverAuthorizerKey,
    svmSecretKeys: loadSvmFeePayers().map((key) => key.secretKey) as readonly Uint8Array[],
    quiet: flags.quiet === true,
  };
}
