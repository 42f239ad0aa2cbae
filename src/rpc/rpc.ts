/** Configured URLs matched to chains by `eth_chainId` (Solana: `getGenesisHash`); with any set,
 * only their chains are served: a key never settles through an unchosen endpoint. */
import {
  type Client,
  createClient,
  createPublicClient,
  fallback,
  type PublicClient,
  type Transport,
} from "viem";
import { FacilitatorError } from "../protocol/errors.js";
import { caip2, KNOWN_NETWORKS, knownNetwork } from "../protocol/networks.js";
import { solanaCluster, solanaNetworkOfGenesisHash } from "../protocol/solana-networks.js";
import { type JsonRpcOptions, jsonRpcTransport } from "./json-rpc.js";
import { aroundRequests, limitsMet, providerState, RateLimitedError } from "./provider-limits.js";
import { answeredOnceConfirmed } from "./rpc-confirmed.js";
import { isUnreachable, redactUrl, rpcErrorKind, unreachableReason } from "./rpc-errors.js";

export { isUnreachable, neverReachedNode, redactUrl, unreachableReason } from "./rpc-errors.js";

export interface RpcOptions {
  /** RPC URLs from flags, environment or config; their chains are found with eth_chainId. */
  readonly rpcUrls?: readonly string[];
  /** Public RPCs: true beside configured URLs, false never; by default when none is configured. */
  readonly useDefaultRpcs?: boolean | undefined;
  /** Per-request timeout toward the node (default 10 s). */
  readonly requestTimeoutMs?: number;
  /** Most calls in one batch request (default 1,000; a provider refusing one teaches a lower). */
  readonly rpcBatchLimit?: number | undefined;
  /** Told of each request that got no answer from its node, by endpoint (redacted). */
  readonly metrics?: RpcErrorSink | undefined;
}

/** What the transport tells serve's metrics (core/metrics.ts' sink is one): the calls that failed. */
export interface RpcErrorSink {
  rpcError(endpoint: string, reason: string): void;
}

export class RpcRegistry {
  readonly #options: RpcOptions;
  readonly #urls: readonly string[];
  readonly #publicRpcs: boolean;
  readonly #resolved = new Map<string, number>();
  /** Configured URLs of Solana clusters, with the cluster's CAIP-2 id. */
  readonly #solana = new Map<string, string>();
  readonly #solanaClients = new Map<string, { client: Client; via: string }>();
  /** Configured URLs that could not be reached to learn their chain, with why. */
  #unresolved = new Map<string, string>();
  readonly #clients = new Map<number, { client: PublicClient; via: string }>();
  /** Chains asked for before their URL's chain was learned: that answer, checked (confirmed()). */
  readonly #confirming = new Map<number, Promise<void>>();
  #resolving: Promise<void> | undefined;

  constructor(options: RpcOptions = {}) {
    this.#urls = [...new Set(options.rpcUrls ?? [])];
    this.#publicRpcs = options.useDefaultRpcs ?? this.#urls.length === 0;
    this.#options = options;
  }

  /** Throws `unsupported_network`, or `chain_unavailable` when a URL that might serve the chain
   * was unreachable. `network`: the chain as the caller wrote it, for the message. */
  async client(chainId: number, network: string = caip2(chainId)): Promise<PublicClient> {
    const cached = this.#clients.get(chainId);
    if (cached) return cached.client;
    const lone = this.#loneUnlearned();
    if (lone !== undefined) return this.#askingAlongside(chainId, network, lone);
    await this.#resolve();
    const urls = this.#urlsFor(chainId, network);
    const client = createPublicClient({ transport: this.#transport(urls) });
    this.#clients.set(chainId, { client, via: urls.map(redactUrl).join(", ") });
    return client;
  }

  /** The lone configured URL's client before its chain is learned (reads used once it is). */
  unlearnedClient(): PublicClient | undefined {
    const url = this.#loneUnlearned();
    if (url === undefined) return undefined;
    return createPublicClient({ transport: this.#transport([url]) });
  }

  /** The URLs that serve a chain, or client()'s error when none does. */
  #urlsFor(chainId: number, network: string): string[] {
    // In the order configured: the first is asked first, the next when it fails.
    const urls = this.#urls.filter((url) => this.#resolved.get(url) === chainId);
    if (urls.length > 0) return urls;
    // One of the unreachable URLs may be the one for this chain: say so rather than guess.
    if (this.#unresolved.size > 0) throw this.#unreachable(network);
    const publicUrl = this.#publicRpcs ? knownNetwork(chainId)?.defaultRpcUrl : undefined;
    if (!publicUrl) throw this.#notServed(chainId, network);
    return [publicUrl];
  }

  /** The one configured URL while its chain is not learned, when nothing else could serve one. */
  #loneUnlearned(): string | undefined {
    const [url] = this.#urls;
    if (this.#urls.length !== 1 || url === undefined || this.#publicRpcs) return undefined;
    return this.#resolved.has(url) || this.#solana.has(url) ? undefined : url;
  }

  /** The lone URL's client before its chain is learned: reads go out beside `eth_chainId` (a round
   * trip saved), answered only once that chain is this one; else they throw client()'s error. */
  #askingAlongside(chainId: number, network: string, url: string): PublicClient {
    const confirmed = this.#resolve().then(() => {
      if (this.#resolved.get(url) === chainId) return;
      this.#clients.delete(chainId);
      this.#urlsFor(chainId, network);
      throw this.#notServed(chainId, network);
    });
    confirmed.catch(() => undefined);
    this.#confirming.set(chainId, confirmed);
    const client = createPublicClient({
      transport: answeredOnceConfirmed(this.#transport([url]), confirmed),
    });
    this.#clients.set(chainId, { client, via: redactUrl(url) });
    return client;
  }

  /** Settles once the chain's client is known to serve it, else rejects with client()'s error. */
  confirmed(chainId: number): Promise<void> {
    return this.#confirming.get(chainId) ?? Promise.resolve();
  }

  /** A Solana cluster's client (configured URLs only); throws as client() does. */
  async solanaClient(network: string, named: string = network): Promise<Client> {
    const cached = this.#solanaClients.get(network);
    if (cached) return cached.client;
    await this.#resolve();
    const urls = [...this.#solana].filter(([, id]) => id === network).map(([url]) => url);
    if (urls.length === 0) {
      if (this.#unresolved.size > 0) throw this.#unreachable(named);
      const label = solanaCluster(network)?.label;
      const name = named === network ? network : `${named} (${network})`;
      const why = this.#servedNames().length > 0 ? this.#serves() : "no Solana RPC is configured";
      throw notServed(label && label !== named ? `${name} (${label})` : name, why, "a Solana RPC");
    }
    const client = createClient({ transport: this.#transport(urls) });
    this.#solanaClients.set(network, { client, via: urls.map(redactUrl).join(", ") });
    return client;
  }

  /** The Solana clusters (CAIP-2 ids) the configured URLs serve. */
  async servedSolanaNetworks(): Promise<string[]> {
    await this.#resolve();
    return [...new Set(this.#solana.values())];
  }

  /** The endpoints (redacted) behind a Solana cluster's client, once it has one. */
  solanaVia(network: string): string | undefined {
    return this.#solanaClients.get(network)?.via;
  }

  #servedNames(): string[] {
    return [...new Set([...[...this.#resolved.values()].map(caip2), ...this.#solana.values()])];
  }

  #serves(): string {
    const which =
      this.#urls.length === 1 ? "the configured RPC serves" : "the configured RPCs serve";
    return `${which} ${this.#servedNames().join(", ")}`;
  }

  /** Whether well-known chains without a configured URL are served through public RPCs. */
  get usesPublicRpcs(): boolean {
    return this.#publicRpcs;
  }

  /** The endpoints (redacted) behind a chain's client, once it has one: for messages. */
  via(chainId: number): string | undefined {
    return this.#clients.get(chainId)?.via;
  }

  /** The chains served (configured, and public RPCs' when in use): what client() accepts. */
  async servedChainIds(): Promise<number[]> {
    const ids = new Set(await this.configuredChainIds());
    if (this.#publicRpcs) {
      for (const network of KNOWN_NETWORKS) if (network.defaultRpcUrl) ids.add(network.chainId);
    }
    return [...ids];
  }

  /** Each configured URL (redacted) with its chain id or Solana cluster (neither: unreachable). */
  async endpoints(): Promise<
    { url: string; chainId?: number | undefined; solana?: string | undefined }[]
  > {
    await this.#resolve();
    return this.#urls.map((url) => {
      const solana = this.#solana.get(url);
      return solana
        ? { url: redactUrl(url), solana }
        : { url: redactUrl(url), chainId: this.#resolved.get(url) };
    });
  }

  /** The configured URLs (redacted) whose provider refused calls or batches so far. */
  providerLimits() {
    return this.#urls.flatMap((url) => {
      const met = limitsMet(url);
      return met ? [{ url: redactUrl(url), ...met }] : [];
    });
  }

  /** Chain ids served by configured URLs (after resolving them). */
  async configuredChainIds(): Promise<number[]> {
    await this.#resolve();
    return [...new Set(this.#resolved.values())];
  }

  #notServed(chainId: number, network: string): FacilitatorError {
    const known = knownNetwork(chainId);
    const id = caip2(chainId);
    const label = known && known.label.toLowerCase() !== network.toLowerCase() ? known.label : "";
    const about = [...(network === id ? [] : [id]), ...(label ? [label] : [])];
    const name = about.length > 0 ? `${network} (${about.join(", ")})` : network;
    let why =
      this.#urls.length > 0
        ? this.#serves()
        : this.#publicRpcs
          ? "no RPC is configured"
          : "no RPC is configured and public RPCs are off";
    if (this.#publicRpcs) why += " and it has no built-in public RPC";
    const publicHint =
      !this.#publicRpcs && known?.defaultRpcUrl
        ? " (or allow its public RPC with --public-rpcs)"
        : "";
    return notServed(name, why, "an RPC", publicHint);
  }

  #unreachable(network: string): FacilitatorError {
    const urls = [...this.#unresolved].map(([url, why]) => `${redactUrl(url)} (${why})`);
    const [which, serves] =
      urls.length === 1 ? ["RPC", "chain it serves"] : ["RPCs", "chains they serve"];
    return FacilitatorError.of(
      "chain_unavailable",
      `${network}: the configured ${which} ${urls.join(", ")} could not be reached to learn which ${serves}`,
    );
  }

  /** `url`'s JSON-RPC transport: failures told to metrics; failing over while its provider rests. */
  #counted(url: string, options: Pick<JsonRpcOptions, "batch" | "retryCount" | "failover">) {
    const { requestTimeoutMs: timeout = 10_000, rpcBatchLimit: batchLimit } = this.#options;
    const transport = jsonRpcTransport(url, { ...options, timeout, batchLimit });
    const sink = this.#options.metrics;
    const provider = options.failover ? providerState(url) : undefined;
    if (!sink && !provider) return transport;
    const endpoint = redactUrl(url);
    return aroundRequests(transport, async (method, send) => {
      if (provider && provider.restUntil > Date.now()) {
        const details = "it asked us to wait";
        throw new RateLimitedError({ body: { method }, url: endpoint, details });
      }
      return send().catch((error: unknown) => {
        if (sink && isUnreachable(error)) sink.rpcError(endpoint, rpcErrorKind(error));
        throw error;
      });
    });
  }

  #transport(urls: readonly string[]): Transport {
    const failover = urls.length > 1;
    // Batching folds the concurrent reads of one verify into one HTTP request.
    const transports = urls.map((url) =>
      this.#counted(url, { batch: true, retryCount: 1, failover }),
    );
    const [only] = transports;
    return failover || only === undefined ? fallback(transports) : only;
  }

  #resolve(): Promise<void> {
    const pending = this.#urls.filter((url) => !this.#resolved.has(url) && !this.#solana.has(url));
    if (pending.length === 0) return Promise.resolve();
    this.#resolving ??= Promise.all(
      pending.map(async (url): Promise<[string, string] | undefined> => {
        const client = createPublicClient({ transport: this.#counted(url, { retryCount: 0 }) });
        try {
          this.#resolved.set(url, await client.getChainId());
          return undefined;
        } catch (error) {
          // A node that answered, with an error: perhaps a Solana cluster's.
          if (isUnreachable(error)) return [url, unreachableReason(error)];
          const hash = await client
            .request({ method: "getGenesisHash" } as never)
            .catch(() => undefined);
          const solana = solanaNetworkOfGenesisHash(hash);
          if (solana === undefined) return [url, unreachableReason(error)];
          this.#solana.set(url, solana);
          return undefined;
        }
      }),
    ).then((failed) => {
      this.#unresolved = new Map(failed.filter((entry) => entry !== undefined));
      this.#resolving = undefined;
    });
    return this.#resolving;
  }
}

/** `unsupported_network`: `name` is served by no configured RPC (`why`), and how to add `rpc`. */
const notServed = (name: string, why: string, rpc: string, hint = "") =>
  FacilitatorError.of(
    "unsupported_network",
    `${name} is not served here: ${why}; add ${rpc} for it with --rpc-url, FACILITATOR_RPC_URL or rpcUrls in the config file${hint}`,
  );
