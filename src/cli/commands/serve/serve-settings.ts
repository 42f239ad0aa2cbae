/** What `facilitator serve` hands its serving thread: the settings, read once by the main thread. */
import type { Hex } from "viem";
import type { ApiKeys } from "../../../http/callers.js";
import type { CliConfig } from "../../settings/config.js";

/** The configuration without its key loaders: what can cross to the serving thread. */
export type PlainConfig = Omit<
  CliConfig,
  "loadPrivateKey" | "loadPrivateKeys" | "loadReceiverAuthorizerKey" | "loadSvmFeePayers"
>;

/**
 * Everything the serving thread needs, resolved once in the main thread: a restarted worker gets
 * the same values, even when a key came from a pipe (`<(cmd)`) that can be read only once.
 */
export interface ServeSettings {
  readonly host: string;
  readonly port: number;
  readonly bodyLimitBytes: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerClient: number;
  readonly maxInflightBytes: number;
  readonly allowedHosts: readonly string[];
  /** Old-generation heap of the serving thread, MiB. */
  readonly maxHeapMb: number;
  readonly apiKey: string | undefined;
  /** Named API keys, each with the sellers it may act for (--api-keys-file). */
  readonly apiKeys?: ApiKeys | undefined;
  /** Their file, re-read by the serving thread when it changes. */
  readonly apiKeysFile?: string | undefined;
  readonly config: PlainConfig;
  readonly privateKeys: readonly Hex[];
  /** The receiver authorizer's key (never a settlement key), if configured. */
  readonly receiverAuthorizerKey?: Hex | undefined;
  /** The Solana fee payers' 64-byte secret keys. */
  readonly svmSecretKeys: readonly Uint8Array[];
  readonly quiet: boolean;
}
