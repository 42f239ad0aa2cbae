/** Running the real `facilitator serve` (the built bundle) and talking to it over plain sockets. */
import { type ChildProcess, spawn } from "node:child_process";
import { request as httpRequest } from "node:http";

export interface Serving {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
}

/**
 * Starts `facilitator serve --port 0 ...args` and resolves once it is listening (within 15 s).
 * FACILITATOR_* variables of the test's environment are dropped; `env` adds some.
 */
export function startServe(args: string[], env: Record<string, string> = {}): Promise<Serving> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_")),
  );
  const child = spawn(process.execPath, ["bin/facilitator.js", "serve", "--port", "0", ...args], {
    env: { ...base, FORCE_COLOR: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not start: ${err}`));
    }, 15_000);
    child.stderr?.on("data", (data: Buffer) => {
      err += data.toString();
      const match = /"event":"listening","url":"([^"]+)"/.exec(err);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: match[1], stderr: () => err, exited });
      }
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

/** Resolves once `pattern` shows up in the process's stderr, false after `ms`. */
export async function waitForStderr(serving: Serving, pattern: RegExp, ms: number) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (pattern.test(serving.stderr())) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return pattern.test(serving.stderr());
}

export interface Answer {
  readonly status?: number;
  readonly retryAfter?: string | undefined;
  readonly connection?: string | undefined;
  readonly body?: string;
  /** Set when the connection broke before a whole answer came back (reset, refused, ...). */
  readonly error?: string;
}

/**
 * One request on its own connection (no pooling), bounded to 20 s. A body makes it a POST with
 * Content-Length (or chunked, when the headers ask for it). `localAddress` picks the client's
 * source address (on Linux any 127.x.y.z reaches a server on 127.0.0.1: another client).
 */
export function send(
  url: string,
  options: {
    path?: string;
    body?: string;
    headers?: Record<string, string>;
    localAddress?: string;
  } = {},
): Promise<Answer> {
  const { body, headers = {} } = options;
  const length =
    body === undefined || headers["transfer-encoding"]
      ? {}
      : { "content-length": String(Buffer.byteLength(body)) };
  return new Promise((resolve) => {
    const request = httpRequest(
      `${url}${options.path ?? "/verify"}`,
      {
        method: body === undefined ? "GET" : "POST",
        agent: false,
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
        headers: { "content-type": "application/json", ...length, ...headers },
        timeout: 20_000,
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            retryAfter: response.headers["retry-after"],
            connection: response.headers.connection,
            body: text,
          }),
        );
        response.on("error", (error) => resolve({ error: (error as Error).message }));
      },
    );
    request.on("timeout", () => request.destroy(new Error("timeout")));
    request.on("error", (error) =>
      resolve({ error: (error as NodeJS.ErrnoException).code ?? error.message }),
    );
    request.end(body);
  });
}

/** A POST of `body` to /verify. */
export const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  send(url, { body, headers });
