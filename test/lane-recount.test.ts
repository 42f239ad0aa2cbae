/**
 * A key's lane behind by more than one transaction learns the node's mined count in the
 * background (signers.ts, admission), at most once a second. Every settle of a busy lane used to
 * start that read when none was in flight: 0.06-0.09 eth_getTransactionCount a settle at
 * concurrency 32, a read in most batches, CPU the server and the node spend for nothing
 * (docs/performance.md). The devnet's anvil sits behind test/helpers/rpc-proxy.ts, which counts
 * the calls; payments are the official x402 client's.
 */
import { privateKeyToAccount } from "viem/accounts";
import { beforeAll, expect, test } from "vitest";
import type { Devnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { proxiedDevnet } from "./helpers/proxied-devnet.js";
import type { RpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const net = proxiedDevnet();
let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = net.devnet;
  proxy = await net.proxy({});
});

const SETTLES = 400;
const CONCURRENCY = 32;

test("a busy lane reads its mined count at most once a second, and every payment lands", async () => {
  const f = new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
  const requirements = requirementsV2(devnet);
  const bodies = await Promise.all(
    Array.from({ length: SETTLES }, async (_, i) => {
      const payer = devnet.payers[i % devnet.payers.length];
      if (!payer) throw new Error("no payers");
      return { payload: await clientPayload(payer, requirements), requirements };
    }),
  );
  // The mined count ("latest"); a pending count is the nonce's, or a gap check's on a slow run.
  // A receipt slow to come (on a busy machine, many) has follow.ts look whether anvil passed it
  // over: one anvil_getAutomine and one mined count each. Those are not the lane's recount.
  let reads = 0;
  let parkedChecks = 0;
  proxy.intercept = (method, params) => {
    if (method === "eth_getTransactionCount" && (params as unknown[])[1] === "latest") reads++;
    if (method === "anvil_getAutomine") parkedChecks++;
    return undefined;
  };
  const started = Date.now();
  let next = 0;
  const answers: unknown[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        answers.push((await handleSettle(f, { ...body, waitUntil: "confirmed" })).body);
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  proxy.intercept = () => undefined;
  expect(answers.filter((a) => (a as { success?: boolean }).success)).toHaveLength(SETTLES);
  // One a second at most (the first at once), and one spare.
  const recounts = reads - parkedChecks;
  const said = `${reads} reads (${parkedChecks} by slow receipts) in ${seconds.toFixed(1)} s`;
  expect(recounts, said).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
}, 120_000);
