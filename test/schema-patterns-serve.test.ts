/**
 * Issue 37, item 1, through the real `facilitator serve` (the built bundle, a child process) on
 * a devnet: a payment signed by the official x402 client carries a bazaar extension whose schema
 * pattern is `^` + `a?`×n + `a`×n + `$` and whose value is 256 `a`s. One such /verify held the
 * old serve 36 s at n = 27, `/supported` waiting all along. Now, for every n the pattern limit
 * allows, /verify answers (the payment valid, its discovery rejected with the reason) while
 * `/supported`, asked again and again meanwhile, waits less than 100 ms longer than it does
 * behind the same payments with a pattern that costs nothing (on an idle machine that is the
 * issue's bound: under 100 ms). On the old engine a `/supported` stuck behind a /verify for a
 * second stops the test instead of letting it hang.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { type Serving, startServe } from "./helpers/serve.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const LONGEST = Math.floor((200 - 2) / 3);
/** Longer than this, a `/supported` is counted as stuck (and the test stops). */
const STUCK_MS = 1_000;

let devnet: Devnet;
let dir: string;
let serving: Serving;

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-patterns-"));
  serving = await startServe(["--rpc-url", devnet.rpcUrl, "--journal", path.join(dir, "j.jsonl")]);
}, 60_000);

afterAll(async () => {
  // SIGKILL: a serve stuck in a pattern never runs a SIGTERM handler.
  serving?.child.kill("SIGKILL");
  await serving?.exited;
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A GET or POST that gives up after `ms`: undefined when it did. */
async function ask(url: string, ms: number, body?: unknown) {
  try {
    return await fetch(url, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(ms),
    });
  } catch {
    return undefined;
  }
}

interface Run {
  /** How long each /supported asked meanwhile waited (STUCK_MS when it gave up). */
  readonly waits: number[];
  readonly answers: { n: number; isValid: unknown; bazaar: unknown }[];
}

/** /verify of the payment with `patternOf(n)` for n = 1 to LONGEST, /supported asked meanwhile. */
async function verifyAll(payment: unknown, patternOf: (n: number) => string): Promise<Run> {
  const requirements = requirementsV2(devnet);
  let verifying = true;
  const waits: number[] = [];
  const polling = (async () => {
    while (verifying) {
      const started = performance.now();
      const answer = await ask(`${serving.url}/supported`, STUCK_MS);
      waits.push(answer?.ok ? performance.now() - started : STUCK_MS);
      await answer?.arrayBuffer();
      if (!answer?.ok) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const answers: Run["answers"] = [];
  for (let n = 1; n <= LONGEST && waits.every((w) => w < STUCK_MS); n++) {
    const paymentPayload = {
      ...(payment as object),
      resource: { url: "https://shop.example/q" },
      extensions: {
        bazaar: {
          info: { input: { type: "http", method: "GET", q: "a".repeat(256) } },
          schema: {
            properties: {
              input: { properties: { q: { type: "string", pattern: patternOf(n) } } },
            },
          },
        },
      },
    };
    const answer = await ask(`${serving.url}/verify`, 2 * STUCK_MS, {
      x402Version: 2,
      paymentPayload,
      paymentRequirements: requirements,
    });
    if (!answer) break;
    const side = answer.headers.get("extension-responses");
    answers.push({
      n,
      isValid: ((await answer.json()) as { isValid?: unknown }).isValid,
      bazaar: side ? JSON.parse(Buffer.from(side, "base64").toString("utf8")).bazaar : undefined,
    });
  }
  verifying = false;
  await polling;
  return { waits, answers };
}

const slowest = (run: Run) => Math.max(...run.waits);

test(`/verify with the family n = 1 to ${LONGEST}: /supported never waits 100 ms for it`, async () => {
  const payment = await clientPayload(devnet.payers[0] as DevAccount, requirementsV2(devnet));
  // Warm up, then the same payments with a pattern that costs nothing (`^x1$`, ...): how long
  // /supported waits behind ordinary verifies on this machine (the load of a shared test machine
  // alone makes that 80 to 150 ms). When the family's slowest wait is over the bound, the pair
  // is run once more and judged on that (a machine's stall is not the server's); a server that
  // is held fails both, and no wait may reach STUCK_MS.
  await ask(`${serving.url}/supported`, 10_000);
  await verifyAll(payment, (n) => `^x${n}$`);
  let ordinary: Run | undefined;
  let family: Run | undefined;
  const bound = () => Math.max(100, slowest(ordinary as Run) + 100);
  for (let attempt = 0; attempt < 2 && !(family && slowest(family) < bound()); attempt++) {
    ordinary = await verifyAll(payment, (n) => `^x${n}$`);
    family = await verifyAll(payment, (n) => `^${"a?".repeat(n)}${"a".repeat(n)}$`);
    console.info(
      `/supported: slowest ${slowest(ordinary).toFixed(0)} ms behind ordinary verifies, ${slowest(family).toFixed(0)} ms behind the family (${family.waits.length} asked)`,
    );
    expect(slowest(family)).toBeLessThan(STUCK_MS);
  }
  if (!(ordinary && family)) throw new Error("not run");
  // The family adds less than 100 ms to any wait: on an idle machine, where ordinary verifies
  // hold /supported a few milliseconds, that is the bound of 100 ms.
  expect(slowest(family)).toBeLessThan(bound());
  expect(family.waits.length).toBeGreaterThan(10);
  for (const run of [ordinary, family]) {
    expect(run.answers.map((a) => a.n)).toEqual(Array.from({ length: LONGEST }, (_, i) => i + 1));
    for (const answer of run.answers) {
      // The payment is judged as before; only its discovery is refused.
      expect(answer.isValid, `n = ${answer.n}`).toBe(true);
      expect(answer.bazaar).toEqual({
        status: "rejected",
        rejectedReason: expect.stringContaining("info does not match its schema"),
      });
    }
  }
}, 180_000);
