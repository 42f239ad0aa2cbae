/**
 * A JSON-RPC proxy in front of a real node, for node and provider behaviour anvil does not have (a
 * node without eth_sendRawTransactionSync, an error answer after the node took a transaction, a
 * provider's batch limit or rate limit). It counts the methods it sees, single and batched, and
 * lets a test answer a method itself. It forwards everything else unchanged.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

interface RpcRequest {
  readonly id: unknown;
  readonly method: string;
  readonly params?: unknown;
}

export interface RpcError {
  readonly code: number;
  readonly message: string;
}

/**
 * What the proxy does with one call: forward it (undefined), answer an error without forwarding
 * ("refuse"), forward it and then answer an error anyway ("forward-then-fail"), answer a result
 * without forwarding ("swallow": a node that takes a transaction and drops it), or run something
 * first and then forward it ("before": a front-runner that slips a transaction in ahead).
 */
export type Intercept = (
  method: string,
  params: unknown,
) =>
  | { readonly refuse: RpcError }
  | { readonly forwardThenFail: RpcError }
  | { readonly swallow: unknown }
  | { readonly before: () => Promise<void> }
  | undefined;

/**
 * What a hosted provider does that the node behind it does not (docs: settling-safely.md,
 * "What an RPC provider does"). The refusing modes act on the whole HTTP request, before any call
 * in it is forwarded, so what they refuse never reaches the node; `lagBlocks` changes what the node
 * answers, call by call (`lagging`). Further modes (a pool's `neverMine`) belong beside these: a
 * per-call one in `answerCall`, a per-request one in `refusal`.
 */
export interface ProviderModes {
  /**
   * Batches of more than this many calls are refused whole, as geth's --rpc.batch-request-limit
   * does: HTTP 200 and one error, -32600 "batch too large", carrying the first call's id, in a
   * one-element array ("geth"), or as a bare object with a null id ("bare", as some gateways).
   */
  batchLimit?: number | undefined;
  batchRefusal?: "geth" | "bare" | undefined;
  /**
   * Every `every`-th HTTP request is answered 429 and not forwarded, with `Retry-After:
   * retryAfter` (seconds; none when undefined) and an Infura-style -32005 body, or an empty body
   * with `body: "empty"`; only the first `times` such answers when it is given.
   */
  rateLimit?:
    | {
        readonly every: number;
        readonly times?: number | undefined;
        readonly retryAfter?: number | undefined;
        readonly body?: "json" | "empty" | undefined;
      }
    | undefined;
  /**
   * Reads are served by a replica this many blocks behind the node that takes broadcasts:
   * eth_blockNumber answers head - N, block-tagged reads ("latest", "pending", or a number past
   * head - N) are made at head - N, and a receipt or transaction mined after head - N is not found.
   * The head is read once per HTTP request, so the calls of one batch agree. Broadcasts and
   * everything else go to the node unchanged.
   */
  lagBlocks?: number | undefined;
  /**
   * Every HTTP request (a batch is one) takes this long more, drawn uniformly from [min, max] ms:
   * a provider in another region. Half is spent before the request is forwarded, half after the
   * node answered, so what the node reads is read in the middle, as it would be.
   */
  latencyMs?: { readonly min: number; readonly max: number } | undefined;
}

/** One HTTP request the proxy answered while recording: when it came and left, what it asked. */
export interface RecordedRequest {
  readonly start: number;
  readonly end: number;
  readonly methods: readonly string[];
}

/** What the proxy saw between `record()` and `stop()`. */
export interface Recorded {
  readonly requests: readonly RecordedRequest[];
  /**
   * Sequential round trips: the most requests that came one after another, each sent once the
   * one before was answered (none overlapping another). Requests made together (in parallel or in
   * one batch) count once: it is how many times a caller waited for the provider in a row.
   */
  readonly rounds: number;
  /** The requests of that chain, in order (what the caller waited for, round by round). */
  readonly chain: readonly RecordedRequest[];
}

/**
 * The longest chain of requests none of which overlaps the next: picked earliest end first (the
 * interval-scheduling greedy, which finds the most pairwise disjoint intervals).
 */
export function sequentialRounds(requests: readonly RecordedRequest[]): RecordedRequest[] {
  const chain: RecordedRequest[] = [];
  let after = Number.NEGATIVE_INFINITY;
  for (const request of [...requests].sort((a, b) => a.end - b.end)) {
    if (request.start < after) continue;
    chain.push(request);
    after = request.end;
  }
  return chain;
}

export interface RpcProxy {
  readonly url: string;
  /** How many calls of each method passed through (batched ones counted one by one). */
  readonly counts: Map<string, number>;
  /** What the provider modes refused: batches over the limit, requests answered 429. */
  readonly refused: { batches: number; rateLimited: number };
  /** HTTP requests seen, refused or not. */
  readonly requests: { count: number };
  /** Records every request answered from now until `stop()`: when, and which methods. */
  record(): { stop(): Recorded };
  intercept: Intercept;
  modes: ProviderModes;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Infura's answer to a request over its rate (HTTP 429). */
const RATE_LIMITED: RpcError = {
  code: -32005,
  message: "project ID request rate exceeded: limit exceeded",
};

/** Where each block-tagged read a lagging replica serves carries its block tag. */
const TAGGED: Record<string, number> = {
  eth_getTransactionCount: 1,
  eth_call: 1,
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_getBlockByNumber: 0,
};
/** Reads by hash that a lagging replica answers "not found" for what it has not seen mined. */
const BY_HASH = { eth_getTransactionReceipt: true, eth_getTransactionByHash: true };
/** geth's answer to a read at a block it does not have. */
const HEADER_NOT_FOUND: RpcError = { code: -32000, message: "header not found" };

export async function startRpcProxy(
  upstream: string,
  modes: ProviderModes = {},
): Promise<RpcProxy> {
  const counts = new Map<string, number>();
  /** Each recording, and when it began: it keeps the requests that came after. */
  const recorders = new Map<RecordedRequest[], number>();
  const proxy: RpcProxy = {
    url: "",
    counts,
    refused: { batches: 0, rateLimited: 0 },
    requests: { count: 0 },
    record() {
      const requests: RecordedRequest[] = [];
      recorders.set(requests, performance.now());
      return {
        stop() {
          recorders.delete(requests);
          const chain = sequentialRounds(requests);
          return { requests, rounds: chain.length, chain };
        },
      };
    },
    intercept: () => undefined,
    modes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  async function forward(call: RpcRequest): Promise<unknown> {
    const response = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(call),
    });
    return response.json();
  }

  async function answerCall(call: RpcRequest, lagHead?: bigint): Promise<unknown> {
    counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
    const rule = proxy.intercept(call.method, call.params);
    if (rule && "refuse" in rule) return { jsonrpc: "2.0", id: call.id, error: rule.refuse };
    if (rule && "before" in rule) await rule.before();
    if (rule && "swallow" in rule) return { jsonrpc: "2.0", id: call.id, result: rule.swallow };
    const answer = lagHead === undefined ? await forward(call) : await lagging(call, lagHead);
    if (rule && "forwardThenFail" in rule) {
      return { jsonrpc: "2.0", id: call.id, error: rule.forwardThenFail };
    }
    return answer;
  }

  /** The head a lagging replica has reached, read once for the whole request. */
  async function replicaHead(): Promise<bigint | undefined> {
    const lag = proxy.modes.lagBlocks;
    if (lag === undefined) return undefined;
    const answer = (await forward({
      jsonrpc: "2.0",
      id: 0,
      method: "eth_blockNumber",
    } as RpcRequest)) as { result: string };
    const head = BigInt(answer.result) - BigInt(lag);
    return head < 0n ? 0n : head;
  }

  /** One call as a replica at `head` answers it. */
  async function lagging(call: RpcRequest, head: bigint): Promise<unknown> {
    const params = Array.isArray(call.params) ? [...call.params] : [];
    const result = (value: unknown) => ({ jsonrpc: "2.0", id: call.id, result: value });
    if (call.method === "eth_blockNumber") return result(`0x${head.toString(16)}`);
    const tagAt = TAGGED[call.method];
    if (tagAt !== undefined) {
      const tag = params[tagAt];
      const past = typeof tag === "string" && tag.startsWith("0x") && BigInt(tag) > head;
      if (past && call.method === "eth_getBlockByNumber") return result(null);
      if (past) return { jsonrpc: "2.0", id: call.id, error: HEADER_NOT_FOUND };
      if (tag === undefined || tag === "latest" || tag === "pending") {
        params[tagAt] = `0x${head.toString(16)}`;
      }
      return forward({ ...call, params });
    }
    const answer = (await forward(call)) as { result?: { blockNumber?: string | null } | null };
    if (call.method in BY_HASH) {
      const mined = answer.result?.blockNumber;
      if (typeof mined === "string" && BigInt(mined) > head) return result(null);
    }
    return answer;
  }

  /** The provider's answer to the whole request when a mode refuses it, without forwarding it. */
  function refusal(
    body: RpcRequest | RpcRequest[],
  ): { status: number; headers: Record<string, string>; text: string } | undefined {
    const json = { "content-type": "application/json" };
    const { rateLimit, batchLimit, batchRefusal } = proxy.modes;
    const limiting = rateLimit && (rateLimit.times === undefined || rateLimit.times > 0);
    if (rateLimit && limiting && proxy.requests.count % rateLimit.every === 0) {
      proxy.refused.rateLimited++;
      if (rateLimit.times !== undefined) {
        proxy.modes = { ...proxy.modes, rateLimit: { ...rateLimit, times: rateLimit.times - 1 } };
      }
      const headers: Record<string, string> = rateLimit.body === "empty" ? {} : { ...json };
      if (rateLimit.retryAfter !== undefined) headers["retry-after"] = String(rateLimit.retryAfter);
      const id = Array.isArray(body) ? null : body.id;
      const text =
        rateLimit.body === "empty"
          ? ""
          : JSON.stringify({ jsonrpc: "2.0", id, error: RATE_LIMITED });
      return { status: 429, headers, text };
    }
    if (batchLimit !== undefined && Array.isArray(body) && body.length > batchLimit) {
      proxy.refused.batches++;
      const error = { code: -32600, message: "batch too large" };
      const text =
        batchRefusal === "bare"
          ? JSON.stringify({ jsonrpc: "2.0", id: null, error })
          : JSON.stringify([{ jsonrpc: "2.0", id: body[0]?.id ?? null, error }]);
      return { status: 200, headers: json, text };
    }
    return undefined;
  }

  /** Half of this request's share of the provider's distance (none without `latencyMs`). */
  function halfDelay(): number {
    const latency = proxy.modes.latencyMs;
    if (!latency) return 0;
    return (latency.min + Math.random() * (latency.max - latency.min)) / 2;
  }

  async function handle(request: IncomingMessage, response: ServerResponse, text: string) {
    const start = performance.now();
    let methods: string[] = [];
    const half = halfDelay();
    const answered = (status: number, headers: Record<string, string>, out: string) => {
      const end = performance.now();
      for (const [requests, since] of recorders) {
        if (start >= since) requests.push({ start, end, methods });
      }
      response.writeHead(status, headers).end(out);
    };
    try {
      proxy.requests.count++;
      const body = JSON.parse(text) as RpcRequest | RpcRequest[];
      methods = (Array.isArray(body) ? body : [body]).map((call) => call.method);
      if (half > 0) await sleep(half);
      const refused = refusal(body);
      if (refused) {
        if (half > 0) await sleep(half);
        answered(refused.status, refused.headers, refused.text);
        return;
      }
      const head = await replicaHead();
      const answer = Array.isArray(body)
        ? await Promise.all(body.map((call) => answerCall(call, head)))
        : await answerCall(body, head);
      if (half > 0) await sleep(half);
      answered(200, { "content-type": "application/json" }, JSON.stringify(answer));
    } catch (error) {
      if (!request.destroyed) answered(502, {}, String(error));
    }
  }

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => void handle(request, response, Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, { url: `http://127.0.0.1:${port}` });
}
