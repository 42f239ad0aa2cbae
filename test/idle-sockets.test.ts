/**
 * Issue 18, finding 5: idle sockets. One client opens 3,000 connections to the real
 * `facilitator serve` (the built bundle) and sends nothing on them. Before, node held 1,024 of
 * them (twice --max-connections) until the 10 s headers timeout and dropped every further
 * connection unanswered, a real request from another address among them. What must hold: the
 * other client is answered at once, and the connections that never send headers are closed within
 * a few seconds. The in-process tests below pin the sharing rules with small limits.
 *
 * Linux: 127.0.0.2 is a second client address on loopback, and /proc/net/tcp says which
 * connections the server still holds. The test process needs about 3,100 file descriptors.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { clientOf } from "../src/http/connections.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";
import { type Answer, send, startServe } from "./helpers/serve.js";

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-idle-"));
});

afterAll(async () => {
  await devnet?.stop();
  removeCliJournals();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function verifyBody(i: number): Promise<string> {
  const payer = devnet.payers[i];
  if (!payer) throw new Error(`no payer ${i}`);
  return JSON.stringify(await signSampleRequest(devnet, { payer }));
}

/** Established connections the kernel holds for the server on 127.0.0.1:`port` from 127.0.0.1. */
function heldFromFirstClient(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  let held = 0;
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const [, localAddress, remoteAddress, state] = line.trim().split(/\s+/);
    if (localAddress === local && remoteAddress?.startsWith("0100007F:") && state === "01") {
      held += 1;
    }
  }
  return held;
}

interface Idle {
  readonly socket: Socket;
  closed: boolean;
  /** How long the connection stayed open, ms, once it is closed. */
  lifetimeMs?: number;
}

/**
 * Opens `count` connections from 127.0.0.1 that send nothing, 250 at a time so that the listen
 * backlog does not overflow; each resolves on connect or close (5 s bound). They keep reading, so
 * a close by the server is seen.
 */
async function openIdle(port: number, count: number): Promise<Idle[]> {
  const all: Idle[] = [];
  for (let start = 0; start < count; start += 250) {
    const batch = Array.from({ length: Math.min(250, count - start) }, () => {
      const idle: Idle = { socket: connect(port, "127.0.0.1"), closed: false };
      all.push(idle);
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000);
        let connectedAt: number | undefined;
        idle.socket.on("error", () => undefined);
        idle.socket.resume();
        idle.socket.once("connect", () => {
          connectedAt = Date.now();
          clearTimeout(timer);
          resolve();
        });
        idle.socket.once("close", () => {
          idle.closed = true;
          if (connectedAt !== undefined) idle.lifetimeMs = Date.now() - connectedAt;
          clearTimeout(timer);
          resolve();
        });
      });
    });
    await Promise.all(batch);
  }
  return all;
}

/** Connections opened here that the server has closed, once the count stops changing (2 s bound). */
async function closedOf(idle: readonly Idle[]): Promise<number> {
  let last = -1;
  for (let i = 0; i < 20; i++) {
    const closed = idle.filter((s) => s.closed).length;
    if (closed === last) return closed;
    last = closed;
    await sleep(100);
  }
  return last;
}

const expectOverloaded = (answer: Answer) => {
  expect(answer.status, answer.error ?? answer.body).toBe(503);
  expect(JSON.parse(answer.body ?? "")).toMatchObject({ success: false, error: "overloaded" });
};

describe("3,000 idle sockets from one client (issue 18)", () => {
  test("a request from another address is answered at once; the idle sockets close within a few seconds", async () => {
    const serving = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--journal",
      path.join(dir, "journal"),
    ]);
    const port = Number(new URL(serving.url).port);
    const body = await verifyBody(0);
    const flooded = Date.now();
    const idle = await openIdle(port, 3_000);
    try {
      const floodSeconds = (Date.now() - flooded) / 1000;
      const answer = await send(serving.url, { body, localAddress: "127.0.0.2" });
      // Once the server has taken the last ones from its listen backlog.
      await sleep(300);
      const heldAfterFlood = heldFromFirstClient(port);
      const samples: string[] = [];
      let held = heldAfterFlood;
      // Bounded: the sockets must be gone well before node's old 10 s headers timeout.
      while (held > 0 && Date.now() - flooded < 12_000) {
        await sleep(250);
        held = heldFromFirstClient(port);
        if (samples.length === 0 || held !== heldAfterFlood)
          samples.push(`${((Date.now() - flooded) / 1000).toFixed(1)} s: ${held}`);
      }
      const goneAfter = (Date.now() - flooded) / 1000;
      await closedOf(idle);
      // Each connection's own life, as the client saw it: it does not depend on how long the
      // flood took on a busy machine.
      const longest = Math.max(...idle.map((s) => s.lifetimeMs ?? Number.POSITIVE_INFINITY)) / 1000;
      const summary = `flood of 3,000 in ${floodSeconds} s; held after it ${heldAfterFlood}; other client ${answer.status ?? answer.error}; held ${samples.join(", ")}; none held after ${goneAfter} s; longest-lived ${longest} s`;
      console.log(`idle sockets: ${summary}`);

      expect(answer.status, summary).toBe(200);
      expect(JSON.parse(answer.body ?? "")).toMatchObject({ success: true });
      // Memory stays bounded while they are held: at most twice --max-connections (512), and the
      // few the kernel has queued that the server has yet to take and refuse (a busy machine's
      // count once read 1,033 for a moment; without the bound it is the flood's 3,000).
      expect(heldAfterFlood, summary).toBeLessThanOrEqual(1_024 + 32);
      expect(held, summary).toBe(0);
      // The 5 s headers timeout from the accept, checked each second, and a busy machine's delay.
      expect(longest, summary).toBeLessThan(7.5);
      expect(serving.child.exitCode).toBeNull();
    } finally {
      for (const s of idle) s.socket.destroy();
      serving.child.kill("SIGKILL");
    }
  }, 45_000);
});

describe("--max-connections-per-client", () => {
  test("reaches the server: one address past its share is answered 503 while another is served", async () => {
    const serving = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--journal",
      path.join(dir, "journal-share"),
      "--max-connections",
      "4",
      "--max-connections-per-client",
      "1",
    ]);
    const port = Number(new URL(serving.url).port);
    const idle = await openIdle(port, 1);
    try {
      const body = await verifyBody(2);
      expectOverloaded(await send(serving.url, { body }));
      const other = await send(serving.url, { body, localAddress: "127.0.0.2" });
      expect(other.status, other.error ?? other.body).toBe(200);
    } finally {
      for (const s of idle) s.socket.destroy();
      serving.child.kill("SIGKILL");
    }
  });

  test("a share under 1 or not a whole number is a usage error", async () => {
    for (const bad of ["0", "1.5", "many"]) {
      const run = await runCli(["serve", "--max-connections-per-client", bad]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/--max-connections-per-client must be/);
    }
  });
});

describe("the address a connection is counted under", () => {
  test("IPv4 as it is, IPv4-mapped IPv6 as IPv4, other IPv6 by its /64", () => {
    expect(clientOf("203.0.113.7")).toBe("203.0.113.7");
    expect(clientOf("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(clientOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(clientOf("2001:db8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
    expect(clientOf("2001:0db8:0001:0002::9")).toBe("2001:db8:1:2::/64");
    expect(clientOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientOf("::1")).toBe("0:0:0:0::/64");
    expect(clientOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientOf("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
    expect(clientOf(undefined)).toBe("");
  });
});

describe("sharing the connection limit between client addresses (in-process)", () => {
  const facilitator = () => new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
  let server: RunningServer | undefined;
  const open: Socket[] = [];

  const start = async (maxConnections: number, maxConnectionsPerClient: number) => {
    server = await startServer(createHandler(facilitator()), {
      port: 0,
      maxConnections,
      maxConnectionsPerClient,
    });
    return server;
  };
  /** A request whose headers arrived and whose body never ends: a request in flight. */
  const busy = async (port: number) => {
    const [one] = await openIdle(port, 1);
    if (!one) throw new Error("no socket");
    one.socket.write(
      "POST /verify HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    );
    open.push(one.socket);
    // Until the server has read the headers (it says nothing before the body is complete).
    await sleep(200);
    return one;
  };
  const cleanUp = async () => {
    for (const socket of open.splice(0)) socket.destroy();
    await server?.close();
    server = undefined;
  };

  test("full: a client holding no socket takes the place of an idle one of the client holding the most", async () => {
    try {
      const { port, url } = await start(4, 4);
      // 4 served and 4 turned away: twice the limit, all from 127.0.0.1 and idle.
      const idle = await openIdle(port, 8);
      open.push(...idle.map((s) => s.socket));
      expect(await closedOf(idle)).toBe(0);
      const answer = await send(url, { body: await verifyBody(1), localAddress: "127.0.0.2" });
      expect(answer.status, answer.error ?? answer.body).toBe(200);
      // One place among all connections (twice the limit) and one among those served.
      expect(await closedOf(idle)).toBe(2);
    } finally {
      await cleanUp();
    }
  });

  test("one address for every client (a reverse proxy): no connection displaces another of its own", async () => {
    try {
      const { port, url } = await start(2, 2);
      const body = await verifyBody(1);
      const idle = await openIdle(port, 2);
      open.push(...idle.map((s) => s.socket));
      expectOverloaded(await send(url, { body }));
      // Twice the limit open: a new connection is dropped, not given an idle one's place.
      idle.push(...(await openIdle(port, 2)));
      open.push(...idle.map((s) => s.socket));
      const dropped = await send(url, { body });
      expect(dropped.status, dropped.body).toBeUndefined();
      expect(dropped.error).toBeDefined();
      expect(await closedOf(idle)).toBe(0);
    } finally {
      await cleanUp();
    }
  });

  test("a connection with a request in flight is never displaced", async () => {
    try {
      const { port, url } = await start(2, 2);
      const inFlight = [await busy(port), await busy(port)];
      expectOverloaded(await send(url, { body: await verifyBody(1), localAddress: "127.0.0.2" }));
      expect(await closedOf(inFlight)).toBe(0);
    } finally {
      await cleanUp();
    }
  });

  test("--max-connections-per-client: one address past its share is answered 503 while another is served", async () => {
    try {
      const { port, url } = await start(4, 2);
      const inFlight = [await busy(port), await busy(port)];
      expectOverloaded(await send(url, { body: await verifyBody(1) }));
      const other = await send(url, { body: await verifyBody(1), localAddress: "127.0.0.2" });
      expect(other.status, other.error ?? other.body).toBe(200);
      expect(await closedOf(inFlight)).toBe(0);
    } finally {
      await cleanUp();
    }
  });
});
