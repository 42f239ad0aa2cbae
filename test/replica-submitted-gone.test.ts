/**
 * bench:faults at 60 payments: a replica answers payments `submitted`, their transactions are
 * dropped from the pool, and the replica is killed (SIGKILL) before it sends them again. Started
 * again, it hands their nonce to new payments, so they can never land. Before: the survivor's
 * reconciler recorded them `dropped` (forgetting the answer) and the payment's retry settled it
 * afresh and answered a second success under a new hash. Now the retry moves the money once and is
 * answered `nonce_already_used` with the new hash, and nothing is left open or held. Real
 * processes on one PostgreSQL store, real anvil (blocks mined by hand).
 */
import pg from "pg";
import { createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { chainOf, mineWhile, tokenBalance } from "./helpers/chain.js";
import {
  type Cluster,
  postTo,
  type Replica,
  type SettleReply,
  startCluster,
  startReplica,
} from "./helpers/replicas.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let cluster: Cluster;
const FAST_RECONCILER = {
  FACILITATOR_RECONCILE_SECONDS: "0.5",
  FACILITATOR_RECONCILE_IDLE_SECONDS: "1",
};

beforeAll(async () => {
  cluster = await startCluster({ count: 2, leaseSeconds: 2, mining: "manual" });
}, 90_000);
afterAll(() => cluster?.stop());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const anvil = () => createTestClient({ mode: "anvil", transport: http(cluster.devnet.rpcUrl) });

/** Mines until `work` settles (blocks are mined by hand on this devnet). */
const mining = <T>(work: Promise<T>) => mineWhile(cluster.devnet.rpcUrl, work, 100);

/** Sends `body` until it is not told to retry (the dead replica's claim runs out in 2 s). */
async function settled(url: string, body: unknown): Promise<SettleReply> {
  for (let i = 0; ; i++) {
    const reply = await postTo(url, "/settle", body);
    const retry = reply.status === 503 || reply.body.error === "settlement_in_progress";
    if (!retry || i >= 60) return reply;
    await sleep(250);
  }
}

describe("answered submitted by a replica killed before it sent it again", () => {
  test("its retry on the survivor moves the money once and is never answered a second success", async () => {
    const { devnet, store } = cluster;
    const [doomed, survivor] = cluster.replicas as [Replica, Replica];
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer");
    const payment = async () => {
      const requirements = requirementsV2(devnet, { amount: "1000" });
      return { payload: await clientPayload(payer, requirements), requirements };
    };
    const [body, later] = [await payment(), await payment()];
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const key = doomed.signer.address;

    const first = await postTo(doomed.url, "/settle", { ...body, waitUntil: "submitted" });
    expect(first).toMatchObject({ status: 200, body: { success: true } });
    const hash = first.body.transactionHash as Hex;
    await anvil().dropTransaction({ hash });
    doomed.child.kill("SIGKILL");
    await doomed.exited;

    // Started again with the same key: its next payment takes the dropped one's nonce.
    const restarted = await startReplica(devnet, store, doomed.signer, 2, FAST_RECONCILER);
    cluster.replicas.push(restarted);
    const nonce = await chainOf(devnet).getTransactionCount({ address: key, blockTag: "latest" });
    const other = await mining(settled(restarted.url, later));
    expect(other).toMatchObject({ status: 200, body: { success: true } });
    expect(
      await chainOf(devnet).getTransactionCount({ address: key, blockTag: "latest" }),
    ).toBeGreaterThan(nonce);
    expect(
      await chainOf(devnet)
        .getTransactionReceipt({ hash })
        .catch(() => null),
    ).toBeNull();

    const retry = await mining(settled(survivor.url, body));
    expect(retry).toMatchObject({ status: 400, body: { error: "nonce_already_used" } });
    const afresh = retry.body.transactionHash as Hex;
    expect(afresh).toMatch(/^0x[0-9a-f]{64}$/);
    expect(afresh).not.toBe(hash);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 2_000n);
    const again = await postTo(restarted.url, "/settle", body);
    expect(again).toMatchObject({ status: 400, body: { error: "nonce_already_used" } });

    // Nothing left open, and no hold left on the payer by either run of the killed replica.
    const db = new pg.Client({ connectionString: store });
    db.on("error", () => undefined);
    await db.connect();
    try {
      const left = async () =>
        (
          await db.query(
            `SELECT (SELECT count(*) FROM facilitator_settlements WHERE state IN ('broadcast', 'submitted'))::int AS open,
                    (SELECT count(*) FROM facilitator_reservations WHERE landed_block IS NULL)::int AS held`,
          )
        ).rows[0] as { open: number; held: number };
      let now = await left();
      for (let i = 0; i < 100 && now.open + now.held > 0; i++) {
        await anvil().mine({ blocks: 1 });
        await sleep(100);
        now = await left();
      }
      expect(now).toEqual({ open: 0, held: 0 });
    } finally {
      await db.end();
    }
  }, 120_000);
});
