/**
 * GET /metrics and GET /readyz of the real `facilitator serve` on a devnet: counters and histograms
 * move with the right labels after a settle and a failing verify (the text format is parsed, not
 * snapshotted); readiness follows the RPC, the store and the signers' balances.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { createMetrics } from "../src/http/metrics.js";
import { startRpcProxy } from "./helpers/rpc-proxy.js";
import { type Serving, send, startServe } from "./helpers/serve.js";

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The Prometheus text format, one sample per line (comments skipped). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1] as string] = (pair[2] as string).replace(/\\(.)/g, "$1");
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels`. */
function sampleOf(samples: Sample[], name: string, labels: Record<string, string> = {}) {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length !== 1) {
    throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  }
  return (found[0] as Sample).value;
}

async function scrape(serving: Serving, headers: Record<string, string> = {}) {
  const answer = await send(serving.url, { path: "/metrics", headers });
  expect(answer.status).toBe(200);
  return { text: answer.body ?? "", samples: parseMetrics(answer.body ?? "") };
}

async function readyz(serving: Serving) {
  const answer = await send(serving.url, { path: "/readyz" });
  return { status: answer.status, body: JSON.parse(answer.body ?? "{}") };
}

async function stop(serving: Serving | undefined) {
  if (!serving) return;
  serving.child.kill("SIGTERM");
  await Promise.race([serving.exited, new Promise((r) => setTimeout(r, 5_000))]);
}

let devnet: Devnet;
let dir: string;
const started: Serving[] = [];
let servers = 0;

async function serve(args: string[], env: Record<string, string> = {}) {
  const serving = await startServe(
    ["--journal", path.join(dir, `j${servers++}.jsonl`), ...args],
    env,
  );
  started.push(serving);
  return serving;
}

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-metrics-")),
  ]);
}, 60_000);

// Each test's server is stopped before the next starts: they share the devnet's settlement key,
// and a second serve on a key in use refuses to start.
afterEach(async () => {
  await Promise.all(started.splice(0).map(stop));
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("GET /metrics", () => {
  test("a settle and a failing verify move the counters, histograms and gauges", async () => {
    const keyFile = path.join(dir, "settle.key");
    await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
    const serving = await serve(["--private-key-file", keyFile], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
    });
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const request = JSON.stringify(await signSampleRequest(devnet, { payer }));
    const settled = await send(serving.url, { path: "/settle", body: request });
    expect(settled.status).toBe(200);
    // The same authorization again: used on chain now.
    const verified = await send(serving.url, { path: "/verify", body: request });
    expect(verified.status).toBe(400);
    expect(JSON.parse(verified.body ?? "{}").error).toBe("nonce_already_used");

    const { samples } = await scrape(serving);
    const network = devnet.network;
    const signer = devnet.facilitator.address;
    const chain = { chain_id: String(devnet.chainId), signer };
    expect(
      sampleOf(samples, "facilitator_requests_total", {
        op: "settle",
        network,
        outcome: "success",
      }),
    ).toBe(1);
    expect(
      sampleOf(samples, "facilitator_requests_total", {
        op: "verify",
        network,
        outcome: "nonce_already_used",
      }),
    ).toBe(1);
    for (const op of ["verify", "settle"]) {
      expect(sampleOf(samples, "facilitator_request_seconds_count", { op, network })).toBe(1);
      expect(sampleOf(samples, "facilitator_request_seconds_sum", { op, network })).toBeGreaterThan(
        0,
      );
      expect(
        sampleOf(samples, "facilitator_request_seconds_bucket", { op, network, le: "+Inf" }),
      ).toBe(1);
    }
    // The settle's stages, each once, within the settle's own time.
    const settleSeconds = sampleOf(samples, "facilitator_request_seconds_sum", {
      op: "settle",
      network,
    });
    let stagesSeconds = 0;
    for (const stage of ["checks", "journal", "chain"]) {
      const labels = { network, stage };
      expect(sampleOf(samples, "facilitator_settle_stage_seconds_count", labels), stage).toBe(1);
      const seconds = sampleOf(samples, "facilitator_settle_stage_seconds_sum", labels);
      expect(seconds, stage).toBeGreaterThan(0);
      stagesSeconds += seconds;
    }
    expect(stagesSeconds).toBeLessThan(settleSeconds);
    expect(sampleOf(samples, "facilitator_transactions_sent_total", chain)).toBeGreaterThanOrEqual(
      1,
    );
    expect(sampleOf(samples, "facilitator_gas_spent_wei_total", chain)).toBeGreaterThan(0);
    expect(sampleOf(samples, "facilitator_settles_in_flight", chain)).toBe(0);
    expect(sampleOf(samples, "facilitator_signer_balance_wei", chain)).toBeGreaterThan(0);
    // Nothing reverted or was replaced: the counters exist without samples.
    expect(samples.some((s) => s.name === "facilitator_transactions_reverted_total")).toBe(false);
    expect(samples.some((s) => s.name === "facilitator_rpc_errors_total")).toBe(false);
    // Every metric is ours.
    expect(samples.every((s) => s.name.startsWith("facilitator_"))).toBe(true);

    const ready = await readyz(serving);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      ready: true,
      failed: [],
      store: { shared: false, reachable: true },
    });
    expect(ready.body.signers).toEqual([expect.objectContaining({ network, signer, ok: true })]);
  });

  test("with an API key, /metrics needs it; /readyz and /health do not", async () => {
    const serving = await serve([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
      FACILITATOR_API_KEY: "scrape-key",
    });
    expect((await send(serving.url, { path: "/metrics" })).status).toBe(401);
    const { samples } = await scrape(serving, { authorization: "Bearer scrape-key" });
    expect(samples.length).toBeGreaterThan(0);
    expect((await readyz(serving)).status).toBe(200);
    expect((await send(serving.url, { path: "/health" })).status).toBe(200);
  });

  test("metrics of two facilitators in one process stay apart", async () => {
    const [a, b] = await Promise.all([createMetrics(), createMetrics()]);
    a.transactionSent(1, "0x1");
    expect((await a.render()).text).toMatch(/facilitator_transactions_sent_total\{.*\} 1/);
    expect((await b.render()).text).not.toMatch(/facilitator_transactions_sent_total\{/);
    // A receipt reported twice (a reconciled retry) counts once.
    const receipt = { hash: "0xab", signer: "0x1", reverted: true, gasWei: 5n };
    a.transactionMined(1, receipt);
    a.transactionMined(1, { ...receipt, hash: "0xAB" });
    const samples = parseMetrics((await a.render()).text);
    expect(sampleOf(samples, "facilitator_gas_spent_wei_total", { chain_id: "1" })).toBe(5);
    expect(sampleOf(samples, "facilitator_transactions_reverted_total", { chain_id: "1" })).toBe(1);
    a.observeStore("claim", 0.002);
    expect(
      sampleOf(parseMetrics((await a.render()).text), "facilitator_store_seconds_count", {
        op: "claim",
      }),
    ).toBe(1);
  });
});

describe("GET /readyz", () => {
  test("503 naming signer_balance for a signer without native balance", async () => {
    const unfunded = generatePrivateKey();
    const serving = await serve([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: unfunded,
    });
    const { status, body } = await readyz(serving);
    expect(status).toBe(503);
    expect(body).toMatchObject({
      ready: false,
      failed: ["signer_balance"],
      minSignerBalanceWei: "1",
    });
    expect(body.signers).toEqual([
      expect.objectContaining({
        signer: privateKeyToAccount(unfunded).address,
        ok: false,
        balanceWei: "0",
      }),
    ]);
    // /health stays liveness: the RPC answers.
    expect((await send(serving.url, { path: "/health" })).status).toBe(200);
    const { samples } = await scrape(serving);
    expect(
      sampleOf(samples, "facilitator_signer_balance_wei", {
        signer: privateKeyToAccount(unfunded).address,
      }),
    ).toBe(0);
  });

  test("a floor above the balance: --min-signer-balance", async () => {
    const serving = await serve(["--min-signer-balance", "1000000000000000000000000000"], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
    });
    const { status, body } = await readyz(serving);
    expect(status).toBe(503);
    expect(body.failed).toEqual(["signer_balance"]);
  });

  test("503 naming rpc once the RPC is down; RPC errors counted by endpoint, without credentials", async () => {
    const proxy = await startRpcProxy(devnet.rpcUrl);
    const port = new URL(proxy.url).port;
    const secretUrl = `http://user:s3cret@127.0.0.1:${port}/v2/APIKEY123`;
    const serving = await serve([], {
      FACILITATOR_RPC_URL: secretUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
    });
    expect((await readyz(serving)).status).toBe(200);
    await proxy.close();

    const { status, body } = await readyz(serving);
    expect(status).toBe(503);
    expect(body.ready).toBe(false);
    expect(body.failed).toContain("rpc");
    expect(body.networks).toEqual([expect.objectContaining({ ok: false })]);
    expect(JSON.stringify(body)).not.toMatch(/s3cret|APIKEY123/);

    const started = Date.now();
    const { text, samples } = await scrape(serving);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(text).not.toMatch(/s3cret|APIKEY123/);
    const errors = samples.filter((s) => s.name === "facilitator_rpc_errors_total");
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e.labels.endpoint).toBe(`http://127.0.0.1:${port}/…`);
    // The balance could not be read: no stale sample.
    expect(samples.some((s) => s.name === "facilitator_signer_balance_wei")).toBe(false);
  });
});

describe("in-process handler", () => {
  test("/metrics is 404 without metrics; /readyz reports the journal as a store that answers", async () => {
    const facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
    const get = (url: string, handler = createHandler(facilitator)) =>
      handler({ method: "GET", url, headers: {} });
    expect((await get("/metrics")).status).toBe(404);
    const ok = await get("/readyz");
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({
      ready: true,
      store: { shared: false, where: "in memory", reachable: true },
      signers: [],
    });
  });
});
