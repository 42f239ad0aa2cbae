/**
 * The benches' load generator: POSTs over node:http with one keep-alive socket per worker. It
 * costs the client less CPU per request than fetch (undici), and the client shares the cores with
 * the servers it measures.
 */
import http from "node:http";

export interface Posted {
  readonly status: number;
  readonly ms: number;
  readonly text: string;
  readonly error?: string;
}

export interface Loaded {
  readonly seconds: number;
  readonly answers: Posted[];
  /** Answers that are not 200 with `"success":true`. */
  readonly failures: number;
}

/** POSTs `body` on `agent`'s sockets; never throws. */
export function postOnce(
  target: URL,
  body: string,
  agent: http.Agent,
  timeoutMs: number,
): Promise<Posted> {
  const sent = performance.now();
  return new Promise((resolve) => {
    const request = http.request(
      target,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            ms: performance.now() - sent,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", (error) =>
          resolve({ status: 0, ms: performance.now() - sent, text: "", error: error.message }),
        );
      },
    );
    request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on("error", (error) =>
      resolve({ status: 0, ms: performance.now() - sent, text: "", error: error.message }),
    );
    request.end(body);
  });
}

export const succeeded = (answer: Posted) =>
  answer.status === 200 && /"success"\s*:\s*true/.test(answer.text);

/** Sends bodies[i % length], `concurrency` at a time, until `total` are answered or time is up. */
export async function loadPosts(
  url: string,
  bodies: readonly string[],
  concurrency: number,
  total: number,
  options: { seconds?: number; timeoutMs?: number; stop?: () => boolean } = {},
): Promise<Loaded> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const answers: Posted[] = [];
  const started = performance.now();
  const deadline = started + (options.seconds ?? 60) * 1000;
  let issued = 0;
  const worker = async () => {
    while (issued < total && performance.now() < deadline && !options.stop?.()) {
      const body = bodies[issued % bodies.length] as string;
      issued += 1;
      answers.push(await postOnce(target, body, agent, options.timeoutMs ?? 30_000));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { seconds, answers, failures: answers.filter((a) => !succeeded(a)).length };
}
