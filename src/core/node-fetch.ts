/**
 * The `fetch` viem's http transport calls for JSON-RPC, over node:http(s) with keep-alive sockets.
 * Every verify makes one RPC round trip; through the global fetch (undici and its web streams) its
 * client side was about a tenth of a verify's CPU and much of its garbage. viem keeps everything
 * else: batching, the timeout (it aborts the signal given here), and the error classes the rest of
 * the code reads (a socket error stays the cause, with its code, of viem's HttpRequestError).
 * A redirect, which JSON-RPC endpoints rarely answer, is left to the global fetch to follow.
 */
import http from "node:http";
import https from "node:https";

/** What viem reads of a response (utils/rpc/http.ts): no body stream, the text at once. */
interface RpcResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
  readonly body: null;
  text(): Promise<string>;
}

/** viem's own cap on a response (maxResponseBodySize), checked here as the bytes arrive. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
} as const;

const isRedirect = (status: number) => status >= 300 && status < 400 && status !== 304;

function headersOf(message: http.IncomingMessage): RpcResponse["headers"] {
  return {
    get(name: string) {
      const value = message.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
    },
  };
}

export function nodeFetch(
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  const agent =
    url.protocol === "http:" || url.protocol === "https:" ? agents[url.protocol] : undefined;
  if (!agent || typeof init.body !== "string") return fetch(input, init);
  const body = init.body;
  const signal = init.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const headers: Record<string, string | number> = {
      ...(init.headers as Record<string, string> | undefined),
      "content-length": Buffer.byteLength(body),
    };
    const send = url.protocol === "https:" ? https.request : http.request;
    const request = send(url, { method: init.method ?? "POST", headers, agent }, (message) => {
      const status = message.statusCode ?? 0;
      if (isRedirect(status) && message.headers.location) {
        message.resume();
        fetch(input, init).then(resolve, reject);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      message.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          message.destroy(new Error(`the response is larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      let ended = false;
      message.once("error", reject);
      message.once("close", () => {
        if (!ended) reject(new Error("the connection closed before the response ended"));
      });
      message.once("end", () => {
        ended = true;
        const text = Buffer.concat(chunks).toString("utf8");
        const response: RpcResponse = {
          ok: status >= 200 && status < 300,
          status,
          statusText: message.statusMessage ?? "",
          headers: headersOf(message),
          body: null,
          text: () => Promise.resolve(text),
        };
        resolve(response as unknown as Response);
      });
    });
    const abort = () =>
      request.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal?.addEventListener("abort", abort, { once: true });
    request.once("close", () => signal?.removeEventListener("abort", abort));
    request.once("error", reject);
    request.end(body);
  });
}
