/**
 * A JSON-RPC proxy in front of a real node, for node behaviour anvil does not have (a node without
 * eth_sendRawTransactionSync, an error answer after the node took a transaction). It counts the
 * methods it sees, single and batched, and lets a test answer a method itself.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

interface RpcRequest {
  readonly id: unknown;
  readonly method: string;
  readonly params?: unknown;
}

export interface RpcError {
  readonly code: number;
  readonly message: string;
}

/**
 * What the proxy does with one call: forward it (undefined), answer an error without forwarding
 * ("refuse"), forward it and then answer an error anyway ("forward-then-fail"), answer a result
 * without forwarding ("swallow": a node that takes a transaction and drops it), or run something
 * first and then forward it ("before": a front-runner that slips a transaction in ahead).
 */
export type Intercept = (
  method: string,
  params: unknown,
) =>
  | { readonly refuse: RpcError }
  | { readonly forwardThenFail: RpcError }
  | { readonly swallow: unknown }
  | { readonly before: () => Promise<void> }
  | undefined;

export interface RpcProxy {
  readonly url: string;
  /** How many calls of each method passed through (batched ones counted one by one). */
  readonly counts: Map<string, number>;
  intercept: Intercept;
  close(): Promise<void>;
}

export async function startRpcProxy(upstream: string): Promise<RpcProxy> {
  const counts = new Map<string, number>();
  const proxy: RpcProxy = {
    url: "",
    counts,
    intercept: () => undefined,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  async function forward(call: RpcRequest): Promise<unknown> {
    const response = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(call),
    });
    return response.json();
  }

  async function one(call: RpcRequest): Promise<unknown> {
    counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
    const rule = proxy.intercept(call.method, call.params);
    if (rule && "refuse" in rule) return { jsonrpc: "2.0", id: call.id, error: rule.refuse };
    if (rule && "before" in rule) await rule.before();
    if (rule && "swallow" in rule) return { jsonrpc: "2.0", id: call.id, result: rule.swallow };
    const answer = await forward(call);
    if (rule && "forwardThenFail" in rule) {
      return { jsonrpc: "2.0", id: call.id, error: rule.forwardThenFail };
    }
    return answer;
  }

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as
          | RpcRequest
          | RpcRequest[];
        const answer = Array.isArray(body) ? await Promise.all(body.map(one)) : await one(body);
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify(answer));
      } catch (error) {
        response.writeHead(502).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, { url: `http://127.0.0.1:${port}` });
}
