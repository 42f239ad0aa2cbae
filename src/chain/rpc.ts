/**
 * RPC access per chain. Configured URLs are matched to chains with `eth_chainId` (once, lazily);
 * chains without a configured URL fall back to the registry's public default.
 */
import {
  BaseError,
  createPublicClient,
  fallback,
  HttpRequestError,
  http,
  type PublicClient,
  SocketClosedError,
  TimeoutError,
  type Transport,
} from "viem";
import { FacilitatorError } from "../errors.js";
import { knownNetwork } from "./networks.js";

export interface RpcOptions {
  /** RPC URLs from flags, environment or config; their chains are found with eth_chainId. */
  readonly rpcUrls?: readonly string[];
  /** Use the registry's public RPCs for chains without a configured URL (default true). */
  readonly useDefaultRpcs?: boolean;
  /** Per-request timeout toward the node (default 10 s). */
  readonly requestTimeoutMs?: number;
}

/** Only scheme, host and port: RPC URLs often carry an API key in the path or the userinfo. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const tail = parsed.pathname !== "/" || parsed.search ? "/…" : "";
    return `${parsed.protocol}//${parsed.host}${tail}`;
  } catch {
    return "<invalid url>";
  }
}

/** True when the error means the node could not be reached (as opposed to the node answering). */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  return Boolean(
    error.walk(
      (e) =>
        e instanceof HttpRequestError ||
        e instanceof TimeoutError ||
        e instanceof SocketClosedError,
    ),
  );
}

/** True when the request certainly never reached the node (so nothing was broadcast). */
export function neverReachedNode(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  const http = error.walk((e) => e instanceof HttpRequestError);
  if (!(http instanceof HttpRequestError)) return false;
  let cause: unknown = http.cause;
  while (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN") return true;
    cause = cause.cause;
  }
  return false;
}

export class RpcRegistry {
  readonly #urls: readonly string[];
  readonly #useDefaults: boolean;
  readonly #timeoutMs: number;
  readonly #resolved = new Map<string, number>();
  readonly #clients = new Map<number, PublicClient>();
  #resolving: Promise<void> | undefined;
  #unresolved: string[] = [];

  constructor(options: RpcOptions = {}) {
    this.#urls = [...new Set(options.rpcUrls ?? [])];
    this.#useDefaults = options.useDefaultRpcs ?? true;
    this.#timeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /** The client for a chain; throws `unsupported_network` or `chain_unavailable`. */
  async client(chainId: number): Promise<PublicClient> {
    const cached = this.#clients.get(chainId);
    if (cached) return cached;
    await this.#resolve();
    const urls = [...this.#resolved].filter(([, id]) => id === chainId).map(([url]) => url);
    if (urls.length === 0) {
      if (this.#unresolved.length > 0) {
        // One of the unreachable URLs may be the one for this chain: say so rather than guess.
        throw FacilitatorError.of(
          "chain_unavailable",
          `could not reach ${this.#unresolved.map(redactUrl).join(", ")} to learn its chain id`,
        );
      }
      const fallbackUrl = this.#useDefaults ? knownNetwork(chainId)?.defaultRpcUrl : undefined;
      if (!fallbackUrl) {
        throw FacilitatorError.of(
          "unsupported_network",
          `no RPC is configured for chain id ${chainId}; pass --rpc-url or set FACILITATOR_RPC_URL`,
        );
      }
      urls.push(fallbackUrl);
    }
    const client = createPublicClient({ transport: this.#transport(urls) });
    this.#clients.set(chainId, client);
    return client;
  }

  /** Each configured URL (redacted) with its chain id, or none when it could not be reached. */
  async endpoints(): Promise<{ url: string; chainId?: number | undefined }[]> {
    await this.#resolve();
    return this.#urls.map((url) => ({ url: redactUrl(url), chainId: this.#resolved.get(url) }));
  }

  /** Chain ids served by configured URLs (after resolving them). */
  async configuredChainIds(): Promise<number[]> {
    await this.#resolve();
    return [...new Set(this.#resolved.values())];
  }

  #transport(urls: readonly string[]): Transport {
    const transports = urls.map((url) =>
      // Batching folds the concurrent reads of one verify into one HTTP request.
      http(url, { batch: true, retryCount: 1, timeout: this.#timeoutMs }),
    );
    const [only] = transports;
    return transports.length === 1 && only !== undefined ? only : fallback(transports);
  }

  #resolve(): Promise<void> {
    const pending = this.#urls.filter((url) => !this.#resolved.has(url));
    if (pending.length === 0) return Promise.resolve();
    this.#resolving ??= Promise.all(
      pending.map(async (url) => {
        const client = createPublicClient({
          transport: http(url, { retryCount: 0, timeout: this.#timeoutMs }),
        });
        try {
          this.#resolved.set(url, await client.getChainId());
          return undefined;
        } catch {
          return url;
        }
      }),
    ).then((failed) => {
      this.#unresolved = failed.filter((url): url is string => url !== undefined);
      this.#resolving = undefined;
    });
    return this.#resolving;
  }
}
