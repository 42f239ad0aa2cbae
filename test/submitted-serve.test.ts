/**
 * The operator's bad day of issue 29, item 1, as it was reported: `serve` on a real PostgreSQL
 * store, a fresh payer holding 3000 pays 1000 with `waitUntil: "submitted"`, and its transaction is
 * dropped from the node's pool. Before: nobody retried; 60 s later the money had not moved, the
 * payer's hold never ended (its whole balance refused as `insufficient_funds`), and retrying the
 * body answered a second success. Now: serve's reconciler sends the same bytes again with no
 * retry, the payment lands, the hold ends (the rest of the balance pays), and the retry is refused
 * as the authorization already used. On a real anvil devnet, blocks mined by hand.
 */
import { createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, expect, test } from "vitest";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { type Cluster, postTo, type Replica, startCluster } from "./helpers/replicas.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({
    count: 1,
    mining: "manual",
    env: { FACILITATOR_RECONCILE_SECONDS: "1", FACILITATOR_RECONCILE_IDLE_SECONDS: "1" },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("submitted, then dropped: sent again by serve's reconciler, landed, the hold ended, one success", async () => {
  const { devnet } = cluster;
  const serve = cluster.replicas[0] as Replica;
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  let mining = true;
  const miner = (async () => {
    while (mining) {
      await anvil.mine({ blocks: 1 });
      await sleep(200);
    }
  })();
  const payer = await payerHolding(devnet, 3_000n);
  mining = false;
  await miner;

  const requirements = requirementsV2(devnet, { amount: "1000" });
  const body = { payload: await clientPayload(payer, requirements), requirements };
  const answered = await postTo(serve.url, "/settle", { ...body, waitUntil: "submitted" });
  expect(answered.body, JSON.stringify(answered.body)).toMatchObject({ success: true });
  const hash = answered.body.transactionHash as Hex;
  await anvil.dropTransaction({ hash });
  const payee = await tokenBalance(devnet, devnet.payee.address);

  // Nobody retries: blocks go by, and the reconciler sends it again.
  mining = true;
  const again = (async () => {
    while (mining) {
      await anvil.mine({ blocks: 1 });
      await sleep(200);
    }
  })();
  try {
    const until = Date.now() + 30_000;
    let receipt:
      | Awaited<ReturnType<ReturnType<typeof chainOf>["getTransactionReceipt"]>>
      | undefined;
    while (!receipt && Date.now() < until) {
      receipt = await chainOf(devnet)
        .getTransactionReceipt({ hash })
        .catch(() => undefined);
      if (!receipt) await sleep(250);
    }
    expect(receipt?.status).toBe("success");
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);

    // The hold ended: the payer's other 2000 pay; the same body is never a second success.
    const rest = requirementsV2(devnet, { amount: "2000" });
    const paysRest = await postTo(serve.url, "/settle", {
      payload: await clientPayload(payer, rest),
      requirements: rest,
    });
    expect(paysRest.body, JSON.stringify(paysRest.body)).toMatchObject({ success: true });
    const retried = await postTo(serve.url, "/settle", body);
    expect(retried.body).toMatchObject({ success: false, error: "nonce_already_used" });
  } finally {
    mining = false;
    await again;
  }
}, 120_000);
