/**
 * Retries sellers understand (issue 25): when serve is full, GET /supported is answered 429 with
 * Retry-After, which the official HTTPFacilitatorClient of @x402/core retries (it retries on 429
 * only). A seller starting against a busy facilitator gets /supported once the load drops, instead
 * of failing on a 503. Other paths keep their 503.
 */
import { connect, type Socket } from "node:net";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { afterEach, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";

const open: Socket[] = [];
let server: RunningServer | undefined;

afterEach(async () => {
  for (const socket of open.splice(0)) socket.destroy();
  await server?.close();
  server = undefined;
});

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const timer = setTimeout(() => reject(new Error("connect timed out")), 5_000);
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      clearTimeout(timer);
      open.push(socket);
      resolve(socket);
    });
  });
}

/** A server with one place, taken by an idle connection; each answer's path and status logged. */
async function fullServer(): Promise<{ answers: { path: string; status: number }[] }> {
  const answers: { path: string; status: number }[] = [];
  server = await startServer(createHandler(new Facilitator({ useDefaultRpcs: false })), {
    port: 0,
    maxConnections: 1,
    log: (entry) => answers.push({ path: String(entry.path), status: Number(entry.status) }),
  });
  await openSocket(server.port);
  return { answers };
}

test("the official HTTPFacilitatorClient waits out a full server and gets /supported", async () => {
  const { answers } = await fullServer();
  const client = new HTTPFacilitatorClient({ url: server?.url ?? "" });
  const started = Date.now();
  const supported = client.getSupported();
  // The load drops after the first answer: the idle connection goes away.
  for (let i = 0; i < 100 && answers.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  for (const socket of open.splice(0)) socket.destroy();

  const body = await supported;
  expect(body).toMatchObject({ kinds: expect.any(Array), extensions: expect.any(Array) });
  expect(answers[0]).toEqual({ path: "/supported", status: 429 });
  expect(answers.at(-1)).toEqual({ path: "/supported", status: 200 });
  // It waited as Retry-After said (1 s) before asking again.
  expect(Date.now() - started).toBeGreaterThanOrEqual(900);
});

test("/supported under load: 429 overloaded with Retry-After; /verify keeps its 503", async () => {
  await fullServer();
  const url = server?.url ?? "";
  const supported = await fetch(`${url}/supported`);
  expect(supported.status).toBe(429);
  expect(supported.headers.get("retry-after")).toBe("1");
  expect(await supported.json()).toMatchObject({ success: false, error: "overloaded" });
  const verify = await fetch(`${url}/verify`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  expect(verify.status).toBe(503);
  expect(verify.headers.get("retry-after")).toBe("1");
});

test("a client that gives up after its retries still gets the reason: the official client's error", async () => {
  await fullServer();
  const client = new HTTPFacilitatorClient({ url: server?.url ?? "" });
  // The idle connection stays: every attempt is answered 429, three in all, then it throws.
  await expect(client.getSupported()).rejects.toThrow(/429/);
}, 15_000);
