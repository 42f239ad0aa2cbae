/** One JSON POST over node:http(s) with keep-alive sockets, for json-rpc.ts. */
import http from "node:http";

/** viem's own cap on an answer (maxResponseBodySize), checked as the bytes arrive. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const MAX_REDIRECTS = 5;
interface Client {
  readonly request: typeof http.request;
  readonly agent: http.Agent;
}

const plain: Client = { request: http.request, agent: new http.Agent({ keepAlive: true }) };
/** node:https (and TLS) load only for an https endpoint: about 3 ms of a cold CLI's start. */
let secure: Promise<Client> | undefined;

function clientFor(protocol: string): Client | Promise<Client> {
  if (protocol !== "https:") return plain;
  secure ??= import("node:https").then((https) => ({
    request: https.request as typeof http.request,
    agent: new https.Agent({ keepAlive: true }),
  }));
  return secure;
}

/** The URL without credentials, and the Basic authorization they become (fetch's rule). */
export interface Endpoint {
  readonly url: string;
  /** Parsed once: a URL costs more to parse than the rest of a request's client side. */
  readonly target: URL | undefined;
  readonly authorization?: string | undefined;
}

export function endpointOf(url: string): Endpoint {
  const parsed = URL.parse(url);
  // Not a URL: every request fails as one that never reached a node.
  if (!parsed) return { url, target: undefined };
  if (!parsed.username && !parsed.password) return { url: parsed.toString(), target: parsed };
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  const credentials = `${decode(parsed.username)}:${decode(parsed.password)}`;
  parsed.username = "";
  parsed.password = "";
  const authorization = `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
  return { url: parsed.toString(), target: parsed, authorization };
}

export interface Posted {
  readonly status: number;
  readonly statusText: string;
  readonly text: string;
  readonly retryAfter?: string | undefined;
}

/** One POST, its whole answer read (capped), redirects followed; rejects with the socket's error. */
export async function postOnce(
  target: URL,
  text: string,
  authorization: string | undefined,
  deadline: { timer?: NodeJS.Timeout; abort?: (error: Error) => void },
  redirects = 0,
): Promise<Posted> {
  const { request: send, agent } = await clientFor(target.protocol);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    };
    if (authorization) headers.authorization = authorization;
    const where = {
      protocol: target.protocol,
      hostname: target.hostname.replace(/^\[|\]$/g, ""),
      port: target.port,
      path: `${target.pathname}${target.search}`,
    };
    const request = send({ ...where, method: "POST", headers, agent }, (message) => {
      const status = message.statusCode ?? 0;
      const location = message.headers.location;
      if (status >= 300 && status < 400 && status !== 304 && location) {
        message.resume();
        if (redirects >= MAX_REDIRECTS) {
          reject(new Error(`more than ${MAX_REDIRECTS} redirects`));
          return;
        }
        const next = new URL(location, target);
        postOnce(next, text, authorization, deadline, redirects + 1).then(resolve, reject);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let ended = false;
      message.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          message.destroy(new Error(`the answer is larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      message.once("error", reject);
      message.once("close", () => {
        if (!ended) reject(new Error("the connection closed before the answer ended"));
      });
      message.once("end", () => {
        ended = true;
        const retryAfter = message.headers["retry-after"];
        resolve({
          status,
          statusText: message.statusMessage ?? "",
          text: Buffer.concat(chunks).toString("utf8"),
          retryAfter,
        });
      });
    });
    deadline.abort = (error) => request.destroy(error);
    request.once("error", reject);
    request.end(text);
  });
}
