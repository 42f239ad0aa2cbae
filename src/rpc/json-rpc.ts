/** JSON-RPC over node:http(s) as a viem transport (viem's fetch one was a tenth of a verify's CPU),
 * throwing viem's error classes; one event-loop turn's calls are batched. */
import {
  createTransport,
  type EIP1193RequestFn,
  HttpRequestError,
  RpcRequestError,
  TimeoutError,
  type Transport,
} from "viem";
import { type Endpoint, endpointOf, type Posted, postOnce } from "./http-post.js";
import {
  FAILOVER_WAIT_BUDGET_MS,
  isRateLimitAnswer,
  learnBatchLimit,
  type ProviderState,
  providerState,
  RATE_WAIT_BUDGET_MS,
  RateLimitedError,
  retryAfterMs,
  withinRateLimit,
} from "./provider-limits.js";

export interface JsonRpcOptions {
  readonly batch?: boolean | undefined;
  /** Retries of a failed request (viem's buildRequest decides which), default 3 as viem's. */
  readonly retryCount?: number | undefined;
  /** Time for a whole answer, from the request (default 10 s). */
  readonly timeout?: number | undefined;
  /** Most calls in one batch request (default 1,000, lowered when the provider refuses one). */
  readonly batchLimit?: number | undefined;
  /** Another URL can take a rate-limited call: wait less and fail, so the fallback asks it. */
  readonly failover?: boolean | undefined;
}

/** Answered after a block (EIP-7966): batched only among themselves, or reads would wait too. */
const WAITS_FOR_A_BLOCK = new Set(["eth_sendRawTransactionSync"]);

/** A type, not an interface: viem's errors take it as a record. */
type RpcBody = {
  readonly jsonrpc: "2.0";
  readonly id: number;
  readonly method: string;
  readonly params: unknown;
};

interface RpcAnswer {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: { code: number; message: string; data?: unknown };
}

const isRpcError = (data: unknown): data is { error: { code: number; message: string } } => {
  const error = (data as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === "number" && typeof error?.message === "string";
};

/** viem's stringify: bigints as decimal strings. */
function toJson(value: unknown): string {
  // viem sends hex, so the per-key replacer is paid only when JSON.stringify refuses a bigint.
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? v.toString() : v));
  }
}

let nextId = 0;

/** Sends `body` (a call or a batch): the parsed answer, or throws as viem's http transport does. */
async function exchange(
  endpoint: Endpoint,
  body: RpcBody | RpcBody[],
  timeoutMs: number,
): Promise<unknown> {
  const url = endpoint.url;
  const timedOut = new Error("timed out");
  const deadline: { timer?: NodeJS.Timeout; abort?: (error: Error) => void } = {};
  let posted: Posted;
  try {
    if (!endpoint.target) throw new TypeError("the RPC URL is not a valid URL");
    const answer = postOnce(endpoint.target, toJson(body), endpoint.authorization, deadline);
    posted = await (timeoutMs > 0
      ? new Promise<Posted>((resolve, reject) => {
          deadline.timer = setTimeout(() => {
            deadline.abort?.(timedOut);
            reject(timedOut);
          }, timeoutMs);
          answer.then(resolve, reject);
        })
      : answer);
  } catch (error) {
    if (error === timedOut) throw new TimeoutError({ body, url });
    throw new HttpRequestError({ body, cause: error as Error, url });
  } finally {
    clearTimeout(deadline.timer);
  }
  let data: unknown;
  try {
    data = JSON.parse(posted.text || "{}");
  } catch (error) {
    if (posted.status >= 200 && posted.status < 300) {
      throw new HttpRequestError({ body, cause: error as Error, url });
    }
    data = { error: posted.text };
  }
  if (posted.status < 200 || posted.status >= 300) {
    // A node that refuses a whole batch answers one error, bare or in a one-element array.
    const error = Array.isArray(body) && Array.isArray(data) && data.length === 1 ? data[0] : data;
    if (posted.status === 429) {
      const said = isRpcError(error) ? error.error.message : posted.text.slice(0, 200);
      throw new RateLimitedError({
        body,
        url,
        status: 429,
        details: said || posted.statusText,
        retryAfterMs: retryAfterMs(posted.retryAfter),
      });
    }
    if (isRpcError(error)) {
      throw new RpcRequestError({ body, error: error.error, status: posted.status, url });
    }
    const details = toJson((data as { error?: unknown } | null)?.error) || posted.statusText;
    throw new HttpRequestError({ body, details, status: posted.status, url });
  }
  return data;
}

/** Calls waiting for this turn's batch to go out. */
interface Pending {
  readonly body: RpcBody;
  readonly resolve: (answer: RpcAnswer) => void;
  readonly reject: (error: unknown) => void;
}

/** The one error a provider answers a whole batch with (bare, or alone in an array), if it did. */
function wholeBatchError(data: unknown, calls: number): RpcAnswer | undefined {
  if (!Array.isArray(data)) return isRpcError(data) ? (data as RpcAnswer) : undefined;
  return data.length === 1 && calls > 1 && isRpcError(data[0]) ? (data[0] as RpcAnswer) : undefined;
}

/** Whether a batch was refused as a batch: a JSON-RPC error with an error status, or 413. */
const refusedAsBatch = (error: unknown) =>
  !(error instanceof RateLimitedError) &&
  (error instanceof RpcRequestError || (error instanceof HttpRequestError && error.status === 413));

function batcher(endpoint: Endpoint, timeoutMs: number, state: ProviderState) {
  let queue: Pending[] = [];
  /** A batch refused whole ran nothing: sent again in halves, the URL's limit lowered. */
  const split = (calls: Pending[]) => {
    const limit = learnBatchLimit(state, calls.length);
    for (let i = 0; i < calls.length; i += limit) send(calls.slice(i, i + limit));
  };
  const send = (calls: Pending[]) => {
    const [only] = calls;
    if (calls.length === 1 && only) {
      exchange(endpoint, only.body, timeoutMs).then(
        (data) => only.resolve(data as RpcAnswer),
        only.reject,
      );
      return;
    }
    const bodies = calls.map((c) => c.body);
    exchange(endpoint, bodies, timeoutMs).then(
      (data) => {
        const whole = wholeBatchError(data, calls.length);
        // A rate limit for the whole batch is every call's: each waits and is sent again.
        if (whole?.error && !isRateLimitAnswer(whole.error)) return split(calls);
        const answers = Array.isArray(data) ? (data as RpcAnswer[]) : [];
        const byId = new Map(answers.map((a) => [a.id, a]));
        for (const call of calls) {
          const found = byId.get(call.body.id) ?? whole;
          if (found) call.resolve(found);
          else call.reject(new Error(`Expected ${calls.length} responses to batch request.`));
        }
      },
      (error: unknown) => {
        if (refusedAsBatch(error)) return split(calls);
        for (const call of calls) call.reject(error);
      },
    );
  };
  const flush = () => {
    const calls = queue;
    queue = [];
    if (calls.length > 0) send(calls);
  };
  return (body: RpcBody) =>
    new Promise<RpcAnswer>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ body, resolve, reject });
      if (queue.length >= state.batchLimit) flush();
    });
}

/** A viem transport for the JSON-RPC endpoint at `url` (http or https; credentials allowed). */
export function jsonRpcTransport(url: string, options: JsonRpcOptions = {}): Transport {
  const endpoint = endpointOf(url);
  const timeoutMs = options.timeout ?? 10_000;
  const state = providerState(url, options.batchLimit);
  const budgetMs = options.failover ? FAILOVER_WAIT_BUDGET_MS : RATE_WAIT_BUDGET_MS;
  const single = async (body: RpcBody) => (await exchange(endpoint, body, timeoutMs)) as RpcAnswer;
  const reads = options.batch ? batcher(endpoint, timeoutMs, state) : single;
  const waits = options.batch ? batcher(endpoint, timeoutMs, state) : single;
  const send = (body: RpcBody) => (WAITS_FOR_A_BLOCK.has(body.method) ? waits : reads)(body);
  /** One call, or the provider's rate limit as a RateLimitedError to wait out. */
  const call = (body: RpcBody): Promise<RpcAnswer | RateLimitedError> =>
    send(body).then(
      (answer) =>
        answer.error && isRateLimitAnswer(answer.error)
          ? new RateLimitedError({ body, url: endpoint.url, details: answer.error.message })
          : answer,
      (error: unknown) => {
        if (error instanceof RateLimitedError) return error;
        throw error;
      },
    );
  return ({ retryCount }) =>
    createTransport(
      {
        key: "http",
        name: "HTTP JSON-RPC",
        type: "http",
        retryCount: options.retryCount ?? retryCount,
        timeout: timeoutMs,
        request: (async ({ method, params }: { method: string; params?: unknown }) => {
          nextId = (nextId + 1) % Number.MAX_SAFE_INTEGER;
          const body: RpcBody = { jsonrpc: "2.0", id: nextId, method, params };
          const request = { body, url: endpoint.url };
          const answer = await withinRateLimit(state, budgetMs, request, () => call(body));
          if (answer.error) {
            throw new RpcRequestError({ body, error: answer.error, url: endpoint.url });
          }
          return answer.result;
        }) as EIP1193RequestFn,
      },
      { url: endpoint.url },
    );
}
