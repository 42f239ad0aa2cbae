/**
 * The node:http adapter over real loopback sockets: limits, slow and broken clients, memory under
 * abuse, and a graceful stop that lets a settle in flight answer. Every loop here is bounded.
 */
import { connect, type Socket } from "node:net";
import { createPublicClient, createTestClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { treeStatusKb } from "../bench/lib.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { startServe } from "./helpers/serve.js";

let devnet: Devnet;
let server: RunningServer;
const logged: Record<string, unknown>[] = [];

beforeAll(async () => {
  devnet = await startDevnet();
  const facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
  server = await startServer(createHandler(facilitator), {
    port: 0,
    bodyLimitBytes: 4096,
    headersTimeoutMs: 500,
    requestTimeoutMs: 1_000,
    log: (entry) => logged.push(entry),
  });
});

afterAll(async () => {
  await server?.close();
  await devnet?.stop();
});

const payer = (i: number) => {
  const account = devnet.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

async function verifyOk(): Promise<void> {
  const request = await signSampleRequest(devnet, { payer: payer(0) });
  const response = await fetch(`${server.url}/verify`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ success: true });
}

/** Writes raw bytes on a fresh connection; resolves with what came back when the server closed it. */
function raw(chunks: (string | Buffer)[], options: { pauseMs?: number; endAfter?: boolean } = {}) {
  return new Promise<{ text: string; closedBy: "server" | "timeout" }>((resolve, reject) => {
    const socket: Socket = connect(server.port, "127.0.0.1");
    let text = "";
    const guard = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedBy: "timeout" });
    }, 5_000);
    socket.on("data", (data) => {
      text += data.toString("latin1");
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(guard);
      resolve({ text, closedBy: "server" });
    });
    socket.on("connect", async () => {
      try {
        for (const chunk of chunks) {
          if (socket.destroyed) break;
          socket.write(chunk);
          if (options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
        }
        if (options.endAfter) socket.end();
      } catch (error) {
        reject(error);
      }
    });
  });
}

describe("limits", () => {
  test("the server binds 127.0.0.1 by default", () => {
    expect(server.host).toBe("127.0.0.1");
  });

  test("a body over the limit is 413, counted while it streams (no Content-Length)", async () => {
    const head =
      "POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    const chunk = `400\r\n${"a".repeat(0x400)}\r\n`;
    const { text } = await raw([head, chunk, chunk, chunk, chunk, chunk]);
    expect(text).toMatch(/^HTTP\/1\.1 413/);
    expect(text).toContain('"error":"payload_too_large"');
    await verifyOk();
  });

  test("a declared Content-Length over the limit is refused before the body is read", async () => {
    const { text } = await raw([
      "POST /settle HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999\r\n\r\n",
    ]);
    expect(text).toMatch(/^HTTP\/1\.1 413/);
  });

  test("headers that never finish are cut off by the headers timeout", async () => {
    const started = Date.now();
    const result = await raw(["POST /verify HTTP/1.1\r\nHost: x\r\n"]);
    expect(result.closedBy).toBe("server");
    expect(Date.now() - started).toBeLessThan(4_000);
    await verifyOk();
  });

  test("a body that never finishes is cut off by the request timeout", async () => {
    const result = await raw([
      'POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pay',
    ]);
    expect(result.closedBy).toBe("server");
    await verifyOk();
  });

  test("a truncated body (client hangs up) and malformed HTTP leave the server serving", async () => {
    await raw(
      [
        'POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pay',
      ],
      {
        endAfter: true,
      },
    );
    const garbage = await raw(["GARBAGE\r\n\r\n"]);
    expect(garbage.text).toMatch(/^HTTP\/1\.1 400/);
    await verifyOk();
  });

  test("every request gets one JSON log line, without bodies", async () => {
    await verifyOk();
    const last = logged.at(-1);
    expect(last).toMatchObject({
      method: "POST",
      path: "/verify",
      status: 200,
      payer: payer(0).address,
    });
    expect(Object.keys(last ?? {}).sort()).toEqual([
      "durationMs",
      "method",
      "path",
      "payer",
      "status",
      "time",
    ]);
  });
});

/** `facilitator serve` as a process; its journal in the temporary state directory of the tests. */
const serveProcess = (args: string[]) => startServe(args);

// serve and its worker process, summed.
const rssKiB = (pid: number) => treeStatusKb(pid, "VmRSS") ?? Number.NaN;

describe("a serving process", () => {
  test("memory stays flat under 4,000 malformed, oversized and unknown requests", async () => {
    const { child, url } = await serveProcess(["--rpc-url", devnet.rpcUrl]);
    try {
      const pid = child.pid as number;
      const bad = [
        () =>
          fetch(`${url}/verify`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{nope",
          }),
        () =>
          fetch(`${url}/verify`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "x".repeat(70_000),
          }),
        () =>
          fetch(`${url}/settle`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "[]",
          }),
        () => fetch(`${url}/nowhere`),
        () => fetch(`${url}/verify`, { method: "PUT" }),
      ];
      const round = async (n: number) => {
        for (let i = 0; i < n; i += 50) {
          await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              (bad[(i + j) % bad.length] as () => Promise<Response>)()
                .then((r) => r.arrayBuffer())
                .catch(() => undefined),
            ),
          );
        }
      };
      // Warm up (JIT, heap sizing), then compare the plateau: after 1,000 more and 3,000 more.
      await round(1_000);
      await round(1_000);
      const plateau = rssKiB(pid);
      await round(2_000);
      const after = rssKiB(pid);
      // A leak of even 10 KiB a request would add about 20 MiB here.
      expect(after - plateau, `RSS ${plateau} KiB → ${after} KiB`).toBeLessThan(20 * 1024);
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);
});

describe("graceful stop", () => {
  let stalled: Devnet;
  beforeAll(async () => {
    stalled = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await stalled?.stop();
  });

  test("on SIGTERM the process refuses new requests, the settle in flight answers, then it exits 0", async () => {
    const { writeFileSync, mkdtempSync } = await import("node:fs");
    const dir = mkdtempSync("/tmp/facilitator-test-");
    writeFileSync(`${dir}/key`, stalled.facilitator.privateKey, { mode: 0o600 });
    const { child, url } = await serveProcess([
      "--rpc-url",
      stalled.rpcUrl,
      "--private-key-file",
      `${dir}/key`,
      "--confirm-timeout",
      "20",
    ]);
    const who = stalled.payers[0];
    if (!who) throw new Error("no payer");
    const request = await signSampleRequest(stalled, { payer: who });
    const answer = fetch(`${url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));

    const rpc = createPublicClient({ transport: http(stalled.rpcUrl) });
    const facilitator = stalled.facilitator.address;
    for (let i = 0; i < 100; i++) {
      const [pending, latest] = await Promise.all([
        rpc.getTransactionCount({ address: facilitator, blockTag: "pending" }),
        rpc.getTransactionCount({ address: facilitator, blockTag: "latest" }),
      ]);
      if (pending > latest) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => resolve(code)),
    );
    child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    // A request that comes while it stops is answered, not cut: 503, and not to come back here.
    const refused = await fetch(`${url}/health`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("connection")).toBe("close");
    expect(await refused.json()).toMatchObject({ error: "overloaded" });

    await createTestClient({ mode: "anvil", transport: http(stalled.rpcUrl) }).mine({ blocks: 1 });
    const settled = await answer;
    expect(settled).toMatchObject({ status: 200, body: { success: true } });
    expect(await exited).toBe(0);
  }, 40_000);

  test("close() in-process waits for the request in flight", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [stalled.rpcUrl],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(stalled.facilitator.privateKey),
      confirmTimeoutMs: 20_000,
      receiptPollMs: 100,
    });
    const local = await startServer(createHandler(facilitator), { port: 0 });
    const who = stalled.payers[1];
    if (!who) throw new Error("no payer");
    const request = await signSampleRequest(stalled, { payer: who });
    const answer = fetch(`${local.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    }).then((r) => r.json());
    await new Promise((r) => setTimeout(r, 500));
    let closed = false;
    const closing = local.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(closed).toBe(false);
    await createTestClient({ mode: "anvil", transport: http(stalled.rpcUrl) }).mine({ blocks: 1 });
    expect(await answer).toMatchObject({ success: true });
    await closing;
    expect(closed).toBe(true);
  }, 40_000);
});
