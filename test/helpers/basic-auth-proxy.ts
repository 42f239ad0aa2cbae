/**
 * An RPC endpoint that wants HTTP Basic credentials, in front of a real node: what a hosted RPC
 * reached as `https://user:pass@host/path` looks like. It records what each request carried.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  readonly path: string;
  readonly authorization?: string | undefined;
}

export interface BasicAuthProxy {
  /** http://127.0.0.1:<port>, without credentials or path. */
  readonly url: string;
  readonly seen: SeenRequest[];
  /** Closes the port and every open connection: later requests are refused. */
  close(): Promise<void>;
}

/** `user` and `password` as the server compares them, before any URL encoding. */
export async function startBasicAuthProxy(
  upstream: string,
  user: string,
  password: string,
): Promise<BasicAuthProxy> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
  const seen: SeenRequest[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      seen.push({ path: request.url ?? "", authorization: request.headers.authorization });
      if (request.headers.authorization !== expected) {
        response.writeHead(401, { "www-authenticate": 'Basic realm="rpc"' }).end("unauthorized");
        return;
      }
      try {
        const answer = await fetch(upstream, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: Buffer.concat(chunks),
        });
        response.writeHead(answer.status, { "content-type": "application/json" });
        response.end(await answer.text());
      } catch (error) {
        response.writeHead(502).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
