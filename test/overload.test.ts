/**
 * Issue 9, memory: a hostile payer sends 800 concurrent `/verify` requests of about 61 KB, each a
 * valid signed payment whose `requirements.extra` also holds a 30,000-element array (49 MB in
 * all). Before the limits, the serve worker's heap ran out, the process exited and 799 connections
 * were reset. This file runs the real `facilitator serve` process (the built bundle) on a real
 * anvil and proves that every request gets an HTTP answer, none is reset, the process stays up,
 * and an ordinary verify succeeds afterwards. Every wait here is bounded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { treeStatusKb } from "../bench/lib.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { startServer } from "../src/http/server.js";
import { type Answer, post, startServe } from "./helpers/serve.js";

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-overload-"));
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// serve and its worker process, summed.
const rssKiB = (pid: number) => treeStatusKb(pid, "VmRSS") ?? Number.NaN;

/** The request of the incident: valid, signed, and 30,000 zeros in requirements.extra (~61 KB). */
async function bloatedRequest(): Promise<string> {
  const payer = devnet.payers[0];
  if (!payer) throw new Error("no payer");
  const request = await signSampleRequest(devnet, { payer });
  const requirements = request.requirements as Record<string, unknown>;
  const extra = requirements.extra as Record<string, unknown>;
  // Only in requirements: payload.accepted is the same object, and a copy would double the size.
  const bloated = {
    ...request,
    requirements: { ...requirements, extra: { ...extra, padding: new Array(30_000).fill(0) } },
  };
  return JSON.stringify(bloated);
}

describe("800 concurrent 61 KB verifies (issue 9)", () => {
  test("every request is answered 400 or 503, none is reset, the process stays up and serves", async () => {
    const body = await bloatedRequest();
    expect(body.length).toBeGreaterThan(60_000);
    expect(body.length).toBeLessThan(64 * 1024);

    const server = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--journal",
      path.join(dir, "journal"),
    ]);
    let peak = 0;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssKiB(server.child.pid as number));
      } catch {
        // The process is gone; the assertions below say so.
      }
    }, 50);
    try {
      const started = Date.now();
      const answers = await Promise.all(Array.from({ length: 800 }, () => post(server.url, body)));
      const seconds = (Date.now() - started) / 1000;
      clearInterval(sampler);

      const byStatus = new Map<string, number>();
      for (const a of answers) {
        const key = a.error ? `error ${a.error}` : String(a.status);
        byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
      }
      // Give an exit that is under way a moment to be seen.
      await new Promise((r) => setTimeout(r, 200));
      const alive = server.child.exitCode === null && server.child.signalCode === null;
      const summary = `${JSON.stringify(Object.fromEntries(byStatus))} in ${seconds} s, peak RSS ${Math.round(peak / 1024)} MiB, ${alive ? "alive" : `exited ${server.child.exitCode}: ${server.stderr().slice(-300)}`}`;
      console.log(`overload: ${summary}`);

      expect(alive, summary).toBe(true);
      for (const a of answers) {
        expect(a.error, summary).toBeUndefined();
        const parsed = JSON.parse(a.body ?? "") as Record<string, unknown>;
        if (a.status === 400) {
          expect(parsed).toMatchObject({ success: false, error: "invalid_request" });
          expect(parsed.message).toMatch(/requirements\.extra/);
        } else {
          expect(a.status, summary).toBe(503);
          expect(parsed).toMatchObject({ success: false, error: "overloaded" });
          expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
        }
      }

      const payer = devnet.payers[1];
      if (!payer) throw new Error("no payer");
      const ordinary = await post(
        server.url,
        JSON.stringify(await signSampleRequest(devnet, { payer })),
      );
      expect(ordinary.status, ordinary.body ?? ordinary.error).toBe(200);
      expect(server.child.exitCode).toBeNull();
    } finally {
      clearInterval(sampler);
      server.child.kill("SIGKILL");
    }
  }, 30_000);
});

/** Opens a raw connection and resolves once it is established (5 s bound). */
function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const timer = setTimeout(() => reject(new Error("connect timed out")), 5_000);
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(socket);
    });
  });
}

const expectOverloaded = (answer: Answer) => {
  expect(answer.status, answer.error).toBe(503);
  expect(answer.retryAfter).toBe("1");
  expect(JSON.parse(answer.body ?? "")).toMatchObject({ success: false, error: "overloaded" });
};

describe("load limits of the server (in-process)", () => {
  const verifyBody = async (i: number) => {
    const payer = devnet.payers[i];
    if (!payer) throw new Error(`no payer ${i}`);
    return JSON.stringify(await signSampleRequest(devnet, { payer }));
  };
  const facilitator = () => new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });

  test("a connection past --max-connections is answered 503 overloaded and closed", async () => {
    const server = await startServer(createHandler(facilitator()), { port: 0, maxConnections: 2 });
    const idle = [await openSocket(server.port), await openSocket(server.port)];
    try {
      const turnedAway = await post(server.url, await verifyBody(0));
      expectOverloaded(turnedAway);
      expect(turnedAway.connection).toBe("close");
      for (const socket of idle) socket.destroy();
      // Once the idle connections are gone, a new one is served (bounded wait for the close).
      let answer: Answer = {};
      for (let i = 0; i < 50; i++) {
        answer = await post(server.url, await verifyBody(0));
        if (answer.status === 200) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(answer.status, answer.body).toBe(200);
    } finally {
      for (const socket of idle) socket.destroy();
      await server.close();
    }
  });

  test("bytes in flight past --max-inflight-bytes: 503 for that request, the budget comes back", async () => {
    const body = await verifyBody(1);
    const server = await startServer(createHandler(facilitator()), {
      port: 0,
      maxInflightBytes: body.length + 1_000,
    });
    const slow = await openSocket(server.port);
    try {
      // A request that declares 1,000 bytes and sends 10 holds 1,000 bytes of the budget.
      slow.write(
        'POST /verify HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"payload"',
      );
      // Until the server has read the slow request's headers its bytes are not held: on a busy
      // machine that takes longer than any fixed wait, so wait for the first refusal (5 s bound).
      let first: Answer = {};
      for (let i = 0; i < 100 && first.status !== 503; i++) {
        first = await post(server.url, `${body} `);
        if (first.status !== 503) await new Promise((r) => setTimeout(r, 50));
      }
      // Declared, and streamed without a length (chunked): both refused while the budget is short.
      expectOverloaded(first);
      expectOverloaded(await post(server.url, `${body} `));
      expectOverloaded(await post(server.url, `${body} `, { "transfer-encoding": "chunked" }));
      // The slow client gives up: its bytes return to the budget once the server sees the close,
      // and the next request is served (bounded wait, as for the connections above).
      slow.destroy();
      let served: Answer = {};
      for (let i = 0; i < 100 && served.status !== 200; i++) {
        served = await post(server.url, body);
        if (served.status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(served.status, served.body).toBe(200);
    } finally {
      slow.destroy();
      await server.close();
    }
  });
});
