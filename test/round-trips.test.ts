/**
 * Round trips at a distance (issue 38, item 6): against a provider in another region every RPC
 * request costs 200-500 ms, so what a settle waits for is how many requests it makes one after
 * another. The devnet's anvil sits behind test/helpers/rpc-proxy.ts, which adds a fixed delay to
 * each request (so that requests made together overlap there) and records them; these tests count
 * the sequential round trips (`rounds`: requests made together, batched or in parallel, count
 * once), never a time. Payments are the official x402 client's.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { forgetGasEstimates } from "../src/evm/chain/gas.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { type Recorded, type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;
let dir: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-round-trips-")),
  ]);
  // Long enough that requests made together overlap at the proxy whatever the machine's load.
  proxy = await startRpcProxy(devnet.rpcUrl, { latencyMs: { min: 80, max: 80 } });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  removeCliJournals();
});

async function payment(index: number) {
  const requirements = requirementsV2(devnet);
  const payer = devnet.payers[index % devnet.payers.length];
  if (!payer) throw new Error("no payers");
  return { payload: await clientPayload(payer, requirements), requirements };
}

/** The chain of round trips, for a failure's message: `eth_getCode+eth_call › eth_send…`. */
const chainOf = (recorded: Recorded) =>
  recorded.chain.map((request) => [...new Set(request.methods)].join("+")).join(" › ");

/** The synchronous send (one request of the last round trip; others may go beside it). */
function sendOf(recorded: Recorded) {
  const send = recorded.requests.find((r) => r.methods.includes("eth_sendRawTransactionSync"));
  if (!send) throw new Error(`no send: ${chainOf(recorded)}`);
  return send;
}

/** Settles one payment (confirmed) while recording what the proxy was asked. */
async function recordSettle(facilitator: Facilitator, index: number) {
  const request = await payment(index);
  const recorder = proxy.record();
  const reply = await handleSettle(facilitator, { ...request, waitUntil: "confirmed" });
  const recorded = recorder.stop();
  expect(reply.body).toMatchObject({ success: true });
  return recorded;
}

function facilitator() {
  return new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
}

describe("a confirmed settle's sequential round trips", () => {
  test("a running facilitator: its checks, the fees and the asset's code in one round trip, then the send (2)", async () => {
    const running = facilitator();
    await recordSettle(running, 0);
    // Past the second the fees are shared for (chain/fees.ts): this settle reads them.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const recorded = await recordSettle(running, 1);
    // Its reads (payer's and asset's code, the simulation, base fee and tip) together, then the
    // synchronous send that waits for the block: before, the fees took two more one by one.
    expect(recorded.rounds, chainOf(recorded)).toBe(2);
    const reads = recorded.chain[0]?.methods ?? [];
    expect(reads).toEqual(expect.arrayContaining(["eth_getCode", "eth_call"]));
    expect(reads).toEqual(
      expect.arrayContaining(["eth_getBlockByNumber", "eth_maxPriorityFeePerGas"]),
    );
    // The asset's code is still asked afresh by every settle (a restarted chain may lack it): its
    // size, an eth_call among these (asset-code.test.ts); eth_getCode reads the payer's.
    expect(reads.filter((method) => method === "eth_getCode")).toHaveLength(1);
    expect(recorded.chain[1]?.methods).toEqual(["eth_sendRawTransactionSync"]);
  }, 60_000);

  test("a fresh facilitator with nothing learned: the RPC's chain, the nonce and the estimate beside the checks, then the send (2)", async () => {
    // No reused gas estimate (the settle estimates, which is its simulation) and no known nonce.
    forgetGasEstimates();
    const recorded = await recordSettle(facilitator(), 2);
    // Before: the RPC's chain; the checks with the fees; the estimate with the nonce; the send (4).
    expect(recorded.rounds, chainOf(recorded)).toBe(2);
    const send = sendOf(recorded);
    const first = recorded.requests
      .filter((request) => request.end <= send.start)
      .flatMap((request) => request.methods);
    expect(first).toEqual(
      expect.arrayContaining([
        "eth_chainId",
        "eth_getCode",
        "eth_estimateGas",
        "eth_getTransactionCount",
        "eth_getBlockByNumber",
      ]),
    );
  }, 60_000);
});

describe("the CLI at a distance", () => {
  const env = () => ({
    FACILITATOR_RPC_URL: proxy.url,
    FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
    FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
  });

  test("pay and settle - each take what they read together, then (settle) the send: 1 and 2 round trips", async () => {
    let recorder = proxy.record();
    const paid = await runCli(["pay", "--payer", "3"], env());
    let recorded = recorder.stop();
    expect(paid.code, paid.stderr).toBe(0);
    // The RPC's chain beside the devnet's token code with its name() and version(). Before: the
    // chain first, then the rest (2).
    expect(recorded.rounds, chainOf(recorded)).toBe(1);
    expect(recorded.requests.flatMap((request) => request.methods)).toEqual(
      expect.arrayContaining(["eth_chainId", "eth_getCode", "eth_call"]),
    );

    const file = path.join(dir, "payment.json");
    await writeFile(file, paid.stdout);
    recorder = proxy.record();
    const settled = await runCli(["settle", file], env());
    recorded = recorder.stop();
    expect(settled.code, settled.stderr).toBe(0);
    expect(JSON.parse(settled.stdout)).toMatchObject({ success: true });
    // The RPC's chain, the key's transactions from other processes (settle-turn.ts), the checks
    // with the fees, the gas estimate and the key's nonce, all together; then the send. Before:
    // those were 4 round trips one after another, then the send (5).
    expect(recorded.rounds, chainOf(recorded)).toBe(2);
    const send = sendOf(recorded);
    const first = recorded.requests
      .filter((request) => request.end <= send.start)
      .flatMap((request) => request.methods);
    expect(first).toEqual(
      expect.arrayContaining(["eth_chainId", "eth_getTransactionCount", "eth_estimateGas"]),
    );
  }, 60_000);
});
