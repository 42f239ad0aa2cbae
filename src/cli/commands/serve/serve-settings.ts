/** What `facilitator serve` hands its serving worker: the settings, read once by the supervisor. */
import type { Hex } from "viem";
import type { ApiKeys } from "../../../http/callers.js";
import type { CliConfig } from "../../settings/config.js";

/** The configuration without its key loaders: what can cross to the serving worker. */
export type PlainConfig = Omit<
  CliConfig,
  "loadPrivateKey" | "loadPrivateKeys" | "loadReceiverAuthorizerKey" | "loadSvmFeePayers"
>;

/** What the serving worker needs, resolved once: a key from a pipe can be read only once. */
export interface ServeSettings {
  readonly host: string;
  readonly port: number;
  readonly bodyLimitBytes: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerClient: number;
  readonly maxInflightBytes: number;
  readonly allowedHosts: readonly string[];
  /** Old-generation heap of the serving worker, MiB. */
  readonly maxHeapMb: number;
  readonly apiKey: string | undefined;
  /** Named API keys, each with the sellers it may act for (--api-keys-file). */
  readonly apiKeys?: ApiKeys | undefined;
  /** Their file, re-read by the serving worker when it changes. */
  readonly apiKeysFile?: string | undefined;
  readonly config: PlainConfig;
  readonly privateKeys: readonly Hex[];
  /** The receiver authorizer's key (never a settlement key), if configured. */
  readonly receiverAuthorizerKey?: Hex | undefined;
  /** The Solana fee payers' 64-byte secret keys. */
  readonly svmSecretKeys: readonly Uint8Array[];
  readonly quiet: boolean;
  /** The PostgreSQL store's owner name: the supervisor's, so a restarted worker keeps its claims. */
  readonly storeOwner?: string | undefined;
}
