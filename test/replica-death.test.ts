/**
 * A replica killed (-9) in the middle of a settle: another replica, on the same PostgreSQL store,
 * answers the retry of that payment with its true outcome and never sends a second transfer.
 * Blocks are mined by hand, so the dead replica's transaction waits in the pool.
 */
import pg from "pg";
import { createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Devnet } from "../src/evm/devnet/index.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import {
  type Cluster,
  postTo,
  type Replica,
  replicaSigners,
  type SettleReply,
  sentBy,
  startCluster,
  startReplica,
} from "./helpers/replicas.js";
import { cancelAhead } from "./helpers/sign.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let cluster: Cluster;
let devnet: Devnet;
let store: string;
let replicas: Replica[] = [];

const mine = () =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

beforeAll(async () => {
  // Short leases: the dead replica's claim is free again in 2 s.
  cluster = await startCluster({ count: 2, leaseSeconds: 2, mining: "manual" });
  ({ devnet, store, replicas } = cluster);
}, 90_000);

afterAll(() => cluster?.stop());

/** The hashes the store holds for settlements still broadcast. */
async function journaled(): Promise<string[]> {
  const client = new pg.Client({ connectionString: store });
  client.on("error", () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ hashes: string[] }>(
      "SELECT hashes FROM facilitator_settlements WHERE state = 'broadcast'",
    );
    return rows.flatMap((r) => r.hashes);
  } finally {
    await client.end();
  }
}

/** Retries while the dead replica's claim has not run out (its lease is 2 s). */
async function settleWhenFree(url: string, body: unknown): Promise<SettleReply> {
  const until = Date.now() + 15_000;
  for (;;) {
    const reply = await postTo(url, "/settle", body);
    if (reply.body.error !== "settlement_in_progress" || Date.now() > until) return reply;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe("kill -9 of a replica mid-settle", () => {
  test("another replica follows its transaction: pending while unmined, then the same hash, paid once", async () => {
    const [dying, survivor] = replicas as [Replica, Replica];
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const requirements = requirementsV2(devnet);
    const body = { payload: await clientPayload(payer, requirements), requirements };
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const sent = await sentBy(devnet, replicaSigners);

    void postTo(dying.url, "/settle", body);
    const until = Date.now() + 15_000;
    let hashes: string[] = [];
    while (hashes.length === 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      hashes = await journaled();
    }
    expect(hashes).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the broadcast follows the record
    dying.child.kill("SIGKILL");
    await dying.exited;

    // Not mined yet: the survivor cannot sign for the dead key, so it says pending (retryable),
    // with the hash and the key that sent it.
    const pending = await settleWhenFree(survivor.url, body);
    expect(pending).toMatchObject({
      status: 503,
      body: { error: "settlement_pending", transactionHash: hashes[0] },
    });
    expect(String((pending.body as { message?: string }).message)).toContain(dying.signer.address);

    await mine();
    const answered = await settleWhenFree(survivor.url, body);
    expect(answered).toMatchObject({
      status: 200,
      body: { success: true, transactionHash: hashes[0] },
    });
    // Later retries are told it was settled; one transfer in all, sent by the dead replica.
    const again = await postTo(survivor.url, "/settle", body);
    expect(again).toMatchObject({ status: 400, body: { error: "nonce_already_used" } });
    expect(await sentBy(devnet, replicaSigners)).toBe(sent + 1);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 10_000n);
  }, 60_000);

  test("the dead replica's key is free again once its lease ran out", async () => {
    const restarted = await startReplica(devnet, store, replicaSigners[0] as Replica["signer"], 2);
    replicas.push(restarted);
    const health = (await (await fetch(`${restarted.url}/health`)).json()) as {
      store: { signersHeld: string[] };
    };
    expect(health.store.signersHeld).toEqual([replicaSigners[0]?.address.toLowerCase()]);
  }, 30_000);
});

describe("a payer whose settlements revert on one replica", () => {
  test("is throttled by the others too, within a renewal of the leases", async () => {
    const [, survivor, restarted] = replicas as [Replica, Replica, Replica];
    const payer = devnet.payers[3];
    if (!payer) throw new Error("no payer");
    const signer = survivor.signer.address;
    const rpc = chainOf(devnet);
    for (let round = 0; round < 3; round++) {
      const requirements = requirementsV2(devnet, { amount: "1000" });
      const payload = await clientPayload(payer, requirements);
      const sent = await rpc.getTransactionCount({ address: signer, blockTag: "pending" });
      const settling = postTo(survivor.url, "/settle", { payload, requirements });
      for (let i = 0; i < 100; i++) {
        if ((await rpc.getTransactionCount({ address: signer, blockTag: "pending" })) > sent) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
      await cancelAhead(devnet, payer, nonce);
      expect(await settling).toMatchObject({ status: 400, body: { error: "settlement_failed" } });
    }
    // The other replica saw none of those reverts itself.
    const requirements = requirementsV2(devnet, { amount: "1000" });
    const body = { payload: await clientPayload(payer, requirements), requirements };
    let reply = await postTo(restarted.url, "/settle", { ...body, waitUntil: "simulated" });
    for (let i = 0; i < 40 && reply.body.error !== "payer_throttled"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      reply = await postTo(restarted.url, "/settle", { ...body, waitUntil: "simulated" });
    }
    expect(reply).toMatchObject({ status: 429, body: { error: "payer_throttled" } });
    // The gas those reverts wasted counts against the chain's budget on that replica too.
    const metrics = await (await fetch(`${restarted.url}/metrics`)).text();
    const wasted = /^facilitator_wasted_gas\{chain_id="(\d+)"\} (\d+)$/m.exec(metrics);
    expect(wasted?.[1]).toBe(String(devnet.chainId));
    expect(Number(wasted?.[2])).toBeGreaterThan(3 * 20_000);
  }, 60_000);
});
