/**
 * node:http adapter for the pure handler: bytes, limits, timeouts, sockets, logs and a graceful
 * stop. No payment logic lives here.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { failure } from "../errors.js";
import { errorResponse, type Handler, type HttpResponse } from "./handler.js";

export interface ServerOptions {
  readonly host?: string;
  readonly port?: number;
  /** Largest accepted body, counted while it streams in (default 64 KiB). */
  readonly bodyLimitBytes?: number;
  /** Time allowed for the request headers (default 10 s). */
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
  /** Stops accepting, lets requests in flight finish and answer, then resolves. */
  close(): Promise<void>;
}

type Body = { ok: true; body: Buffer } | { ok: false; response: HttpResponse };

function readBody(request: IncomingMessage, limit: number): Promise<Body> {
  const tooLarge = (): Body => ({
    ok: false,
    response: errorResponse(failure("payload_too_large", `the body is over ${limit} bytes`)),
  });
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(tooLarge());
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: Body) => {
      if (done) return;
      done = true;
      resolve(result);
    };
    request.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        // Stop buffering at once; the socket is closed after the 413 is written.
        finish(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => finish({ ok: true, body: Buffer.concat(chunks) }));
    request.on("error", () =>
      finish({
        ok: false,
        response: errorResponse(failure("invalid_request", "the body was cut off")),
      }),
    );
    request.on("aborted", () =>
      finish({
        ok: false,
        response: errorResponse(failure("invalid_request", "the body was cut off")),
      }),
    );
  });
}

export async function startServer(
  handler: Handler,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const limit = options.bodyLimitBytes ?? 64 * 1024;
  const inFlight = new Set<Promise<void>>();

  const serve = async (request: IncomingMessage, response: ServerResponse) => {
    const started = performance.now();
    const method = request.method ?? "GET";
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    let result: HttpResponse;
    let closeAfter = false;
    try {
      const needsBody = method === "POST" || method === "PUT" || method === "PATCH";
      const body = needsBody
        ? await readBody(request, limit)
        : ({ ok: true, body: Buffer.alloc(0) } as const);
      if (body.ok) {
        result = await handler({
          method,
          url: request.url ?? "/",
          headers: request.headers,
          body: body.body,
        });
      } else {
        result = body.response;
        closeAfter = true;
      }
    } catch (error) {
      // The handler does not throw by design; if it ever does, answer without leaking details.
      const text = error instanceof Error ? error.name : "error";
      result = errorResponse(failure("internal_error", `unexpected ${text}`));
    }
    if (!response.destroyed && !response.headersSent) {
      const headers: Record<string, string> = { ...result.headers };
      if (closeAfter) headers.connection = "close";
      response.writeHead(result.status, headers);
      response.end(method === "HEAD" ? undefined : result.body);
      if (closeAfter) response.on("finish", () => request.socket.destroy());
    }
    options.log?.({
      time: new Date().toISOString(),
      method,
      path: path.slice(0, 200),
      status: result.status,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...(result.log.error ? { error: result.log.error } : {}),
      ...(result.log.payer ? { payer: result.log.payer } : {}),
    });
  };

  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // Node checks the two timeouts above on this interval (30 s by default): tighten it.
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    (request, response) => {
      const task = serve(request, response).finally(() => inFlight.delete(task));
      inFlight.add(task);
    },
  );
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
  return {
    url: `http://${shownHost}:${address.port}`,
    host: address.address,
    port: address.port,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Let every request in flight (a settle waiting for its receipt) finish and answer.
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}
