/**
 * Our JSON-RPC transport over node:http (src/rpc/json-rpc.ts), against a local HTTP server that
 * misbehaves on purpose: what the rest of the code reads of a failure (viem's error classes,
 * "never reached the node" before a broadcast, the node's own error) must be what viem's http
 * transport gave.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createPublicClient, HttpRequestError, TimeoutError } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { jsonRpcTransport } from "../src/rpc/json-rpc.js";
import { isUnreachable, neverReachedNode } from "../src/rpc/rpc.js";
import { LOOPBACK_TLS_CERT, LOOPBACK_TLS_KEY } from "./helpers/loopback-tls.js";

let server: Server;
let base: string;
const bodies: unknown[] = [];
const headersSeen: IncomingMessage["headers"][] = [];

function answer(request: IncomingMessage, response: ServerResponse, text: string) {
  const chunks: Buffer[] = [];
  request.on("data", (c: Buffer) => chunks.push(c));
  request.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    bodies.push(body);
    headersSeen.push(request.headers);
    // eth_blockNumber fails with the node's own error; the rest answer `text`.
    const reply = (one: { id: number; method: string }) =>
      one.method === "eth_blockNumber"
        ? { jsonrpc: "2.0", id: one.id, error: { code: -32603, message: "node is unwell" } }
        : { jsonrpc: "2.0", id: one.id, result: text };
    const payload = Array.isArray(body)
      ? body.map(reply)
      : reply(body as { id: number; method: string });
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(payload));
  });
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? "/";
    if (path === "/ok") return answer(request, response, "0x1");
    if (path === "/silent") return; // never answers
    if (path === "/slow-sync") {
      // A synchronous send is answered after its "block"; the rest at once.
      const chunks: Buffer[] = [];
      request.on("data", (c: Buffer) => chunks.push(c));
      request.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
        bodies.push(body);
        const calls = (Array.isArray(body) ? body : [body]) as { id: number; method: string }[];
        const waits = calls.some((c) => c.method === "eth_sendRawTransactionSync");
        const payload = calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: "0x1" }));
        setTimeout(
          () => {
            response.writeHead(200, { "content-type": "application/json" });
            response.end(JSON.stringify(Array.isArray(body) ? payload : payload[0]));
          },
          waits ? 600 : 0,
        );
      });
      return;
    }
    if (path === "/huge") {
      response.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 12; i++) response.write(chunk);
      response.end("{}");
      return;
    }
    if (path === "/cut") {
      response.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      response.write('{"jsonrpc":"2.0",');
      setTimeout(() => request.socket.destroy(), 20);
      return;
    }
    if (path === "/refuse-batch") {
      response.writeHead(400, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "batches are off" },
        }),
      );
      return;
    }
    if (path === "/503") {
      response.writeHead(503, { "content-type": "text/plain" });
      response.end("busy");
      return;
    }
    if (path === "/moved") {
      response.writeHead(307, { location: "/ok" });
      response.end();
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const client = (path: string, options: { timeout?: number; batch?: boolean } = {}) =>
  createPublicClient({
    transport: jsonRpcTransport(`${base}${path}`, { retryCount: 0, timeout: 5_000, ...options }),
  });

describe("JSON-RPC over node:http", () => {
  test("answers, and batches concurrent requests into one HTTP request", async () => {
    bodies.length = 0;
    const c = client("/ok", { batch: true });
    const [a, b] = await Promise.all([c.getChainId(), c.getGasPrice()]);
    expect(a).toBe(1);
    expect(b).toBe(1n);
    expect(bodies).toHaveLength(1);
    expect(Array.isArray(bodies[0]) && bodies[0].length).toBe(2);
  });

  test("a synchronous send is batched apart: reads made beside it do not wait for its block", async () => {
    bodies.length = 0;
    const c = client("/slow-sync", { batch: true });
    const started = performance.now();
    const sync = () =>
      c.request({ method: "eth_sendRawTransactionSync", params: ["0x00"] } as never);
    const sends = Promise.all([sync(), sync()]);
    const [chainId, gasPrice] = await Promise.all([c.getChainId(), c.getGasPrice()]);
    expect(chainId).toBe(1);
    expect(gasPrice).toBe(1n);
    expect(performance.now() - started).toBeLessThan(500);
    await sends;
    // Two HTTP requests: the two sends together, the two reads together.
    expect(bodies).toHaveLength(2);
    const methods = bodies.map((b) => (b as { method: string }[]).map((one) => one.method).sort());
    expect(methods).toContainEqual(["eth_sendRawTransactionSync", "eth_sendRawTransactionSync"]);
    expect(methods).toContainEqual(["eth_chainId", "eth_gasPrice"]);
  });

  test("a node that never answers is a TimeoutError, unreachable", async () => {
    const error = await client("/silent", { timeout: 200 })
      .getChainId()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(
      (error as Error & { walk: (f: (e: unknown) => boolean) => unknown }).walk(
        (e) => e instanceof TimeoutError,
      ),
    ).toBeTruthy();
    expect(isUnreachable(error)).toBe(true);
    expect(neverReachedNode(error)).toBe(false);
  });

  test("a connection cut mid-answer is an HttpRequestError that reached the node", async () => {
    const error = await client("/cut")
      .getChainId()
      .catch((e: unknown) => e);
    expect(isUnreachable(error)).toBe(true);
    expect(neverReachedNode(error)).toBe(false);
    expect(
      (error as Error & { walk: (f: (e: unknown) => boolean) => unknown }).walk(
        (e) => e instanceof HttpRequestError,
      ),
    ).toBeTruthy();
  });

  test("a refused connection never reached the node", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const c = createPublicClient({
      transport: jsonRpcTransport(`http://127.0.0.1:${port}`, { retryCount: 0 }),
    });
    const error = await c.getChainId().catch((e: unknown) => e);
    expect(isUnreachable(error)).toBe(true);
    expect(neverReachedNode(error)).toBe(true);
  });

  test("an answer over 10 MiB is refused while it streams in, and the client keeps working", async () => {
    const error = await client("/huge")
      .getChainId()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(isUnreachable(error)).toBe(true);
    await expect(client("/ok").getChainId()).resolves.toBe(1);
  });

  test("the node's error for one call of a batch is that call's, the others answer", async () => {
    const c = client("/ok", { batch: true });
    const [chainId, block] = await Promise.allSettled([c.getChainId(), c.getBlockNumber()]);
    expect(chainId).toEqual({ status: "fulfilled", value: 1 });
    expect(block.status).toBe("rejected");
    const reason = (block as PromiseRejectedResult).reason as Error;
    expect(reason.message).toContain("node is unwell");
    expect(isUnreachable(reason)).toBe(false);
  });

  test("a node that refuses the whole batch gives its error to every call", async () => {
    const c = client("/refuse-batch", { batch: true });
    const answers = await Promise.allSettled([c.getChainId(), c.getGasPrice()]);
    for (const a of answers) {
      expect(a.status).toBe("rejected");
      expect(((a as PromiseRejectedResult).reason as Error).message).toContain("batches are off");
    }
  });

  test("an HTTP error without a JSON-RPC body is an HttpRequestError with its status", async () => {
    const error = (await client("/503")
      .getChainId()
      .catch((e: unknown) => e)) as Error & {
      walk: (f: (e: unknown) => boolean) => unknown;
    };
    const http = error.walk((e) => e instanceof HttpRequestError) as HttpRequestError;
    expect(http.status).toBe(503);
    expect(isUnreachable(error)).toBe(true);
  });

  test("credentials in the URL go as Basic authorization, never in the request line", async () => {
    headersSeen.length = 0;
    const c = createPublicClient({
      transport: jsonRpcTransport(`${base.replace("http://", "http://us%40er:p%3Ass@")}/ok`, {
        retryCount: 0,
      }),
    });
    await expect(c.getChainId()).resolves.toBe(1);
    expect(headersSeen[0]?.authorization).toBe(
      `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`,
    );
  });

  test("a redirect is followed", async () => {
    await expect(client("/moved").getChainId()).resolves.toBe(1);
  });
});

describe("JSON-RPC over https", () => {
  test("an https endpoint answers through node:https, loaded when first used", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-json-rpc-tls-"));
    const tls = createHttpsServer(
      { key: LOOPBACK_TLS_KEY, cert: LOOPBACK_TLS_CERT },
      (request, response) => answer(request, response, "0x2a"),
    );
    await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
    try {
      const caFile = path.join(dir, "ca.pem");
      writeFileSync(caFile, LOOPBACK_TLS_CERT);
      const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
      // The CA must be trusted from the process's start: a child process with it.
      const script = [
        `import { jsonRpcTransport } from ${JSON.stringify(path.resolve("src/rpc/json-rpc.ts"))};`,
        `const transport = jsonRpcTransport(${JSON.stringify(url)}, { retryCount: 0 })({});`,
        `console.log(await transport.request({ method: "eth_chainId" }));`,
      ].join("\n");
      const file = path.join(dir, "ask.mts");
      writeFileSync(file, script);
      const child = spawn(process.execPath, ["--import", "tsx", file], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (c: Buffer) => (out += c));
      child.stderr.on("data", (c: Buffer) => (err += c));
      const code = await new Promise((resolve) => child.once("exit", resolve));
      expect({ code, out: out.trim(), err: err.slice(0, 500) }).toEqual({
        code: 0,
        out: "0x2a",
        err: "",
      });
    } finally {
      tls.closeAllConnections();
      await new Promise((resolve) => tls.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a URL that is not one", () => {
  test("fails each request as never having reached a node, and does not throw when made", async () => {
    const c = createPublicClient({ transport: jsonRpcTransport("not a url", { retryCount: 0 }) });
    const error = await c.getChainId().catch((e: unknown) => e);
    expect(isUnreachable(error)).toBe(true);
  });
});

describe("a request with a bigint in its params", () => {
  test("goes out with the number in decimal, as viem's stringify writes it", async () => {
    bodies.length = 0;
    const transport = jsonRpcTransport(`${base}/ok`, { retryCount: 0 })({});
    await transport.request({ method: "eth_chainId", params: [12345678901234567890n] } as never);
    expect(JSON.stringify(bodies[0])).toContain('"params":["12345678901234567890"]');
  });
});
