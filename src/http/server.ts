/** node:http adapter for the pure handler: bytes, limits, timeouts, sockets, logs, graceful stop. */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { failure } from "../protocol/errors.js";
import {
  ConnectionGate,
  clientOf,
  DEFAULT_MAX_CONNECTIONS,
  defaultPerClient,
} from "./connections.js";
import { errorResponse, type Handler, type HttpRequest, type HttpResponse } from "./handler.js";
import {
  type Body,
  ByteBudget,
  DEFAULT_MAX_INFLIGHT_BYTES,
  overloaded,
  readBody,
} from "./limits.js";
import { lateAnswer, stoppingFailure } from "./stopping.js";

/** Headers must arrive within this of the connection (a few seconds: callers are programs). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 5_000;

export interface ServerOptions {
  readonly host?: string;
  readonly port?: number;
  /** Largest accepted body, counted while it streams in (default 64 KiB). */
  readonly bodyLimitBytes?: number;
  /** Connections served at once; more get 503 `overloaded` (default 512). */
  readonly maxConnections?: number;
  /** Connections one client address may have served at once (default half of maxConnections). */
  readonly maxConnectionsPerClient?: number;
  /** Request-body bytes buffered across all requests in flight (default 8 MiB). */
  readonly maxInflightBytes?: number;
  /** Time allowed for the request headers, from the connection's accept (default 5 s). */
  readonly headersTimeoutMs?: number;
  /** Time allowed for the whole request to arrive (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** One structured line per request; bodies and keys never reach it. */
  readonly log?: ((entry: Record<string, unknown>) => void) | undefined;
}

export interface RunningServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops: new requests get 503 `overloaded`, those in flight finish (or `answerNow`), then close. */
  close(): Promise<void>;
  /** A stop's time is up: every request still in flight is answered now (stopping.ts). */
  answerNow(): void;
  /** Requests being answered now, by path: what a graceful stop waits for. */
  inFlight(): Record<string, number>;
}

/** After a stop, how long a connection accepted just before it has to send its request. */
const ARRIVAL_GRACE_MS = 300;

interface InFlight {
  readonly method: string;
  readonly path: string;
  readonly response: ServerResponse;
  readonly started: number;
  /** Set once its body is read, for a late answer in its own dialect. */
  request?: HttpRequest;
  answered: boolean;
}

export async function startServer(
  handler: Handler,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const limit = options.bodyLimitBytes ?? 64 * 1024;
  const inFlight = new Map<Promise<void>, InFlight>();
  let stopping = false;
  const budget = new ByteBudget(options.maxInflightBytes ?? DEFAULT_MAX_INFLIGHT_BYTES);

  const serve = async (request: IncomingMessage, held: InFlight) => {
    const { method } = held;
    const refuse = stopping
      ? stoppingFailure()
      : gate.turnsAway(request.socket)
        ? overloaded("too many connections", held.path)
        : undefined;
    let result: HttpResponse;
    let close: "drained" | "now" | undefined;
    let release: (() => void) | undefined;
    try {
      const needsBody = method === "POST" || method === "PUT" || method === "PATCH";
      const body: Body = needsBody
        ? await readBody(request, { limit, budget, refuse })
        : refuse
          ? { ok: false, response: errorResponse(refuse), close: "drained" }
          : { ok: true, body: Buffer.alloc(0), release: () => undefined };
      if (body.ok && stopping) {
        // Its body came in after the stop: refused, as a new request would be.
        body.release();
        result = errorResponse(stoppingFailure());
      } else if (body.ok) {
        release = body.release;
        const asked: HttpRequest = {
          method,
          url: request.url ?? "/",
          headers: request.headers,
          body: body.body,
          client: clientOf(request.socket.remoteAddress),
        };
        held.request = asked;
        result = await handler(asked);
      } else {
        result = body.response;
        close = body.close;
      }
    } catch (error) {
      // The handler does not throw by design; if it does, answer without leaking details.
      const text = error instanceof Error ? error.name : "error";
      result = errorResponse(failure("internal_error", `unexpected ${text}`));
    } finally {
      // The body's bytes count until the handler is done with what was parsed from them.
      release?.();
    }
    // Answered already when the stop's time ran out (answerNow), which logged it.
    if (held.answered) return;
    answer(held, result, close);
  };

  /** Writes `result` on the request's response, once, then logs it. */
  const answer = (held: InFlight, result: HttpResponse, close?: "drained" | "now") => {
    held.answered = true;
    const { method, path, started, response } = held;
    if (!response.destroyed && !response.headersSent) {
      const headers: Record<string, string> = { ...result.headers };
      // While stopping, no connection is kept for another request.
      if (close || stopping) headers.connection = "close";
      // A known length sends head and body in one write, not chunked.
      headers["content-length"] = String(Buffer.byteLength(result.body));
      response.writeHead(result.status, headers);
      response.end(method === "HEAD" ? undefined : result.body);
      // "drained": node closes it after the answer. The socket is taken now: finish lets go of it.
      const socket = response.socket;
      if (close === "now") response.on("finish", () => socket?.destroy());
    }
    options.log?.({
      time: new Date().toISOString(),
      method,
      path: path.slice(0, 200),
      status: result.status,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      // The outcome's code, the node's refusal, the payer and the API key's name, where given.
      ...Object.fromEntries(Object.entries(result.log).filter(([, value]) => value)),
    });
  };

  // The headers timeout runs from the accept: it also closes a socket that never sends a byte.
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // Node checks the two timeouts above on this interval (30 s by default): tighten it.
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    (request, response) => {
      const held: InFlight = {
        method: request.method ?? "GET",
        path: (request.url ?? "/").split("?")[0] ?? "/",
        response,
        started: performance.now(),
        answered: false,
      };
      const task = serve(request, held).finally(() => inFlight.delete(task));
      inFlight.set(task, held);
    },
  );
  const max = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const gate = new ConnectionGate(server, {
    max,
    perClient: options.maxConnectionsPerClient ?? defaultPerClient(max),
  });
  // Malformed HTTP: answer 400 and drop the connection; the server keeps serving.
  server.on("clientError", (_error, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 4020, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  let answeredNow: (() => void) | undefined;
  const late = new Promise<void>((resolve) => {
    answeredNow = resolve;
  });
  return {
    url: `http://${shownHost}:${address.port}`,
    host: address.address,
    port: address.port,
    close() {
      closing ??= (async () => {
        // The listener stays open while stopping: queued connections get a 503 rather than a reset.
        stopping = true;
        const started = Date.now();
        // Requests in flight finish (or answerNow), and a connection just accepted sends its own.
        for (;;) {
          const open = [...inFlight.entries()].filter(([, held]) => !held.answered);
          if (open.length === 0 && Date.now() - started >= ARRIVAL_GRACE_MS) break;
          await Promise.race([
            Promise.allSettled(open.map(([task]) => task)),
            late,
            new Promise((resolve) => setTimeout(resolve, 50)),
          ]);
        }
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
    answerNow() {
      for (const held of inFlight.values()) {
        if (held.answered) continue;
        const result = held.request ? lateAnswer(held.request) : errorResponse(stoppingFailure());
        answer(held, result);
      }
      answeredNow?.();
    },
    inFlight() {
      const byPath: Record<string, number> = {};
      for (const held of inFlight.values()) {
        if (!held.answered) byPath[held.path] = (byPath[held.path] ?? 0) + 1;
      }
      return byPath;
    },
  };
}
