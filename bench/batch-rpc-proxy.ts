/**
 * A counting JSON-RPC proxy in front of anvil: each facilitator under test reaches the devnet
 * through its own, so bench:batch can say how many RPC calls (by method) a paid request cost.
 */
import { Agent, createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";

export interface RpcCounter {
  readonly url: string;
  /** JSON-RPC calls forwarded so far (a batch counts each call in it), by method. */
  counts(): Record<string, number>;
  total(): number;
  /** HTTP requests forwarded so far (a batch is one). */
  requests(): number;
  close(): Promise<void>;
}

export function rpcProxy(upstream: string): Promise<RpcCounter> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });
  const counts: Record<string, number> = {};
  let total = 0;
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      const body = Buffer.concat(chunks);
      for (const match of body.toString("utf8").matchAll(/"method"\s*:\s*"([^"]+)"/g)) {
        const method = match[1] as string;
        counts[method] = (counts[method] ?? 0) + 1;
        total += 1;
      }
      const forward = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": body.length },
          agent,
        },
        (upstreamResponse) => {
          response.writeHead(upstreamResponse.statusCode ?? 502, {
            "content-type": upstreamResponse.headers["content-type"] ?? "application/json",
          });
          upstreamResponse.pipe(response);
        },
      );
      forward.once("error", (error) => {
        if (!response.headersSent) response.writeHead(502);
        response.end(String(error));
      });
      forward.end(body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        counts: () => ({ ...counts }),
        total: () => total,
        requests: () => requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
            agent.destroy();
          }),
      });
    });
  });
}
