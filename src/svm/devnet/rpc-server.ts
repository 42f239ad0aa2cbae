/** JSON-RPC 2.0 over HTTP POST as Solana nodes serve it; bigints are written as exact JSON numbers. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An error answered in the JSON-RPC `error` member. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
/** The largest request body and batch taken. */
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_BATCH = 100;

export const invalidParams = (message: string) => new RpcError(INVALID_PARAMS, message);

export type RpcHandler = (params: unknown[]) => unknown;

const BIGINT_MARK = "\u0000bigint:";

/** JSON text with bigints as exact JSON numbers. */
function stringifyJson(value: unknown): string {
  const text = JSON.stringify(value, (_key, item) =>
    typeof item === "bigint" ? `${BIGINT_MARK}${item}` : item,
  );
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, "$1");
}

type Id = string | number | null;

function replyError(id: Id, { code, message, data }: RpcError) {
  const error = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: "2.0", error, id };
}

const fail = (id: Id, code: number, message: string) => replyError(id, new RpcError(code, message));

async function answer(handlers: Record<string, RpcHandler>, request: unknown) {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    return fail(null, INVALID_REQUEST, "Invalid request");
  }
  const { jsonrpc, method, params, id: rawId } = request as Record<string, unknown>;
  const id: Id = typeof rawId === "string" || typeof rawId === "number" ? rawId : null;
  if (jsonrpc !== "2.0" || typeof method !== "string") {
    return fail(id, INVALID_REQUEST, "Invalid request");
  }
  if (params !== undefined && !Array.isArray(params)) {
    return fail(id, INVALID_PARAMS, "Invalid params: expected an array");
  }
  const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
  if (!handler) return fail(id, METHOD_NOT_FOUND, `Method not found: ${method}`);
  try {
    return { jsonrpc: "2.0", result: await handler(params ?? []), id };
  } catch (error) {
    if (error instanceof RpcError) return replyError(id, error);
    const message = error instanceof Error ? error.message : String(error);
    return fail(id, INTERNAL_ERROR, `Internal error: ${message}`);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = stringifyJson(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** The body, or undefined past `limit` bytes (read to its end all the same, to answer 413). */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
  }
  return size > limit ? undefined : Buffer.concat(chunks);
}

export async function startRpcServer(
  handlers: Record<string, RpcHandler>,
  options: { port?: number | undefined; host?: string | undefined },
) {
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET" && req.url === "/health") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === undefined) return send(res, 413, fail(null, INVALID_REQUEST, "Request too large"));
    let request: unknown;
    try {
      request = JSON.parse(body.toString("utf8"));
    } catch {
      return send(res, 200, fail(null, PARSE_ERROR, "Parse error"));
    }
    if (!Array.isArray(request)) return send(res, 200, await answer(handlers, request));
    if (request.length === 0 || request.length > MAX_BATCH) {
      const message =
        request.length === 0
          ? "Invalid request: empty batch"
          : `Batch too large (max ${MAX_BATCH})`;
      return send(res, 200, fail(null, INVALID_REQUEST, message));
    }
    const answers = [];
    for (const item of request) answers.push(await answer(handlers, item));
    send(res, 200, answers);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, fail(null, INTERNAL_ERROR, "Internal error"));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: (): Promise<void> =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
