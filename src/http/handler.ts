/** The HTTP service as a pure function (no sockets, tested in-process); server.ts adapts node:http. */
import type { Facilitator } from "../facilitator.js";
import {
  type ErrorCode,
  FacilitatorError,
  type Failure,
  failure,
  statusOf,
} from "../protocol/errors.js";
import { parseJson } from "../protocol/request.js";
import { handleSettle, handleVerify, type Reply } from "../protocol/respond.js";
import { type ApiKeys, callerRecognizer, type Identified } from "./callers.js";
import { discoveryAnswer } from "./discovery.js";
import { checkHealth, checkReadiness } from "./health.js";
import { llmsTxt } from "./llms.js";
import type { Metrics } from "./metrics.js";
import { RateBuckets, rateLimited, rateOf } from "./rates.js";

export interface HttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: Buffer | undefined;
  /** The client's address (an IPv6 client by its /64). */
  readonly client?: string | undefined;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** For the request log: the outcome's code and the payer, never the body. */
  readonly log: {
    readonly error?: string | undefined;
    readonly payer?: string | undefined;
    /** A named API key's name (never the key itself): whose rate a 429 is over. */
    readonly apiKey?: string | undefined;
    /** Which refusal of the node's a failed settle ended on (chain/broadcast.ts' kinds). */
    readonly refusal?: string | undefined;
  };
}

export interface HandlerOptions {
  /** When set, /verify and /settle require `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string | undefined;
  /** Named keys with their sellers and rates (callers.ts); a function when re-read while serving. */
  readonly apiKeys?: ApiKeys | (() => ApiKeys | undefined) | undefined;
  /** /verify and /settle requests a minute per client address, for those without a named key. */
  readonly ratePerClient?: number | undefined;
  /** Refused Host headers get 403 `untrusted_host`: the DNS-rebinding guard (hosts.ts). */
  readonly trustedHost?: ((host: string | undefined) => boolean) | undefined;
  /** Counts and times /verify and /settle, and answers GET /metrics (404 without it). */
  readonly metrics?: Metrics | undefined;
  /** Why GET /settlements is off (404): its answers name the host, so it is off beyond loopback. */
  readonly settlementsOff?: string | undefined;
  /** GET /readyz: each signer needs this much native balance on each chain (default 1 wei). */
  readonly minSignerBalanceWei?: bigint | undefined;
}

function answer(status: number, type: string, body: string, log: HttpResponse["log"] = {}) {
  return { status, headers: { "content-type": type }, body, log };
}

const json = (status: number, body: unknown, log: HttpResponse["log"] = {}): HttpResponse =>
  answer(status, "application/json; charset=utf-8", `${JSON.stringify(body)}\n`, log);

/** A failure that may pass with time says when to try again. */
function withRetryAfter(response: HttpResponse, f: Failure | undefined): HttpResponse {
  if (f?.retryAfterSeconds !== undefined) {
    response.headers["retry-after"] = String(Math.max(1, Math.ceil(f.retryAfterSeconds)));
  }
  return response;
}

export function errorResponse(f: Failure): HttpResponse {
  const response = json(
    statusOf(f),
    { success: false, error: f.code, message: f.message },
    { error: f.code, refusal: f.refusal },
  );
  return withRetryAfter(response, f);
}

export function fromReply(reply: Reply): HttpResponse {
  const payer = reply.payer ?? reply.body.payer;
  const response = json(reply.status, reply.body, {
    error: reply.failure?.code,
    refusal: reply.failure?.refusal,
    payer: typeof payer === "string" ? payer : undefined,
  });
  // The x402 side channel (base64 JSON, per extension): for the seller, never its buyer.
  if (reply.extensionResponses) {
    response.headers["extension-responses"] = Buffer.from(
      JSON.stringify(reply.extensionResponses),
    ).toString("base64");
  }
  return withRetryAfter(response, reply.failure);
}

function header(request: HttpRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export const routes: Record<string, readonly string[]> = {
  "/verify": ["POST"],
  "/settle": ["POST"],
  "/accepts": ["POST"],
  "/supported": ["GET", "HEAD"],
  "/health": ["GET", "HEAD"],
  "/readyz": ["GET", "HEAD"],
  "/metrics": ["GET", "HEAD"],
  "/settlements": ["GET", "HEAD"],
  "/llms.txt": ["GET", "HEAD"],
  "/discovery/resources": ["GET", "HEAD"],
  "/discovery/search": ["GET", "HEAD"],
};

function fail(code: ErrorCode, message?: string): HttpResponse {
  return errorResponse(failure(code, message));
}

export function createHandler(facilitator: Facilitator, options: HandlerOptions = {}) {
  const callers = callerRecognizer(options.apiKey, options.apiKeys);
  const buckets = new RateBuckets();
  /** The 429 for a /verify or /settle over its caller's rate, or undefined; counted per key. */
  const overRate = (request: HttpRequest, op: "verify" | "settle", who: Identified) => {
    if (!who.ok) return undefined;
    const rate = rateOf(who, request.client, options.ratePerClient);
    const wait = rate && buckets.take(rate.bucket, rate.perMinute);
    // Named keys only: the one key of --api-key-file has no name of its own.
    const name = who.perMinute !== undefined ? who.caller?.name : undefined;
    if (name !== undefined) {
      options.metrics?.observeCaller(name, op, wait ? "rate_limited" : "served");
    }
    if (!rate || !wait) return undefined;
    const response = errorResponse(rateLimited(rate.whose, rate.perMinute, wait));
    return name !== undefined ? { ...response, log: { ...response.log, apiKey: name } } : response;
  };
  return async function handle(request: HttpRequest): Promise<HttpResponse> {
    const path = request.url.split("?")[0] ?? "/";
    const host = header(request, "host");
    if (options.trustedHost && !options.trustedHost(host)) {
      return fail(
        "untrusted_host",
        `this server does not answer for Host ${JSON.stringify((host ?? "").slice(0, 100))}; name it with --allowed-host, or require an API key`,
      );
    }
    const allowed = routes[path];
    if (!allowed) return fail("not_found", `no endpoint ${path.slice(0, 100)}; see GET /llms.txt`);
    if (!allowed.includes(request.method)) {
      const response = fail("method_not_allowed", `${path} accepts ${allowed.join(", ")}`);
      response.headers.allow = allowed.join(", ");
      return response;
    }

    switch (path) {
      case "/supported":
        return json(200, await facilitator.supported());
      case "/health": {
        const health = await checkHealth(facilitator);
        return json(health.status === "ok" ? 200 : 503, health);
      }
      case "/readyz": {
        const readiness = await checkReadiness(facilitator, options);
        return json(readiness.ready ? 200 : 503, readiness);
      }
      case "/llms.txt":
        return answer(200, "text/plain; charset=utf-8", llmsTxt());
      case "/discovery/resources":
      case "/discovery/search": {
        const answer = await discoveryAnswer(facilitator.discovery, path, request.url);
        return answer.ok ? json(200, answer.body) : errorResponse(answer.failure);
      }
    }

    const started = performance.now();
    const op = path === "/verify" ? "verify" : path === "/settle" ? "settle" : undefined;
    let body: unknown;
    const response = await (async (): Promise<HttpResponse> => {
      const identified = callers.identify(header(request, "authorization"));
      if (!identified.ok) {
        const response = fail(
          "unauthorized",
          identified.presented
            ? "this API key is not one of this server's"
            : "send Authorization: Bearer <api key>",
        );
        response.headers["www-authenticate"] = "Bearer";
        return response;
      }
      const caller = identified.caller;
      const limited = op && overRate(request, op, identified);
      if (limited) return limited;
      if (path === "/settlements") {
        if (options.settlementsOff) return fail("not_found", options.settlementsOff);
        return settlementStatus(facilitator, request.url);
      }
      // GET /metrics: with an API key, scrapers send it too (it shows signers, balances, volume).
      if (path === "/metrics") {
        if (!options.metrics) return fail("not_found", "metrics are served by facilitator serve");
        const { contentType, text } = await options.metrics.render();
        return answer(200, contentType, text);
      }
      const type = header(request, "content-type") ?? "";
      if (!/^application\/(.+\+)?json\s*(;|$)/i.test(type)) {
        return fail("invalid_request", "Content-Type must be application/json");
      }
      const parsed = parseJson((request.body ?? Buffer.alloc(0)).toString("utf8"));
      if (!parsed.ok) return errorResponse(parsed.failure);
      body = parsed.value;
      if (path === "/accepts") {
        const accepts = await facilitator.accepts(parsed.value);
        return accepts.ok ? json(200, accepts.body) : errorResponse(accepts.failure);
      }
      const handleOp = op === "verify" ? handleVerify : handleSettle;
      return fromReply(await handleOp(facilitator, parsed.value, { caller }));
    })();
    if (op) {
      const seconds = (performance.now() - started) / 1000;
      options.metrics?.observeRequest(op, body, response.log.error ?? "success", seconds);
    }
    return response;
  };
}

export type Handler = ReturnType<typeof createHandler>;

async function settlementStatus(facilitator: Facilitator, url: string): Promise<HttpResponse> {
  const query = new URLSearchParams(url.split("?")[1] ?? "");
  const transaction = query.get("transaction");
  const id = query.get("id");
  if (!transaction === !id || (transaction ?? id ?? "").length > 200) {
    return fail(
      "invalid_request",
      "ask for one settlement: /settlements?transaction=<hash or signature> or ?id=<payment-identifier>",
    );
  }
  try {
    const status = await facilitator.status(
      transaction ? { transaction } : { paymentIdentifier: id as string },
    );
    return json(status.found ? 200 : 404, status);
  } catch (error) {
    // Not a hash (400 invalid_request), the store away (503): said as such, not as a 500.
    if (error instanceof FacilitatorError) return errorResponse(error.failure);
    throw error;
  }
}
