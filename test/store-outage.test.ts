/**
 * PostgreSQL stopped and started again under load, two replicas settling all along: while it is
 * away, settles are answered at once with clean 503/500 answers and nothing is sent; once it is
 * back, the same replicas (never restarted) settle again, and every payment answered a success is
 * on chain exactly once, and nothing else is.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Devnet } from "../src/evm/devnet/index.js";
import { tokenBalance } from "./helpers/chain.js";
import type { Postgres } from "./helpers/postgres.js";
import {
  type Cluster,
  postTo,
  type Replica,
  replicaSigners,
  type SettleReply,
  sentBy,
  startCluster,
  tally,
} from "./helpers/replicas.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let cluster: Cluster;
let devnet: Devnet;
let postgres: Postgres;
let replicas: Replica[] = [];

beforeAll(async () => {
  // Leases outlive the outage, so the replicas keep their keys through it.
  cluster = await startCluster({ count: 2, leaseSeconds: 6 });
  ({ devnet, postgres, replicas } = cluster);
}, 90_000);

afterAll(() => cluster?.stop());

async function newPayment(i: number) {
  const payer = devnet.payers[i % devnet.payers.length];
  if (!payer) throw new Error("no payer");
  const requirements = requirementsV2(devnet, { amount: "1000" });
  return { payload: await clientPayload(payer, requirements), requirements };
}

describe("the store goes away under load and comes back", () => {
  test("clean answers while away; settles again after, without a restart; nothing lost or doubled", async () => {
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const sent = await sentBy(devnet, replicaSigners);
    const bodies = await Promise.all(Array.from({ length: 240 }, (_, i) => newPayment(i)));
    const attempts: SettleReply[] = [];
    const finals: SettleReply[] = [];
    let next = 0;
    let resumedAt = Number.POSITIVE_INFINITY;
    let paidAfterResume = 0;
    // 12 clients, each settling one payment after another over both replicas, as a resource
    // server would: a refused settle is tried again a moment later, on the other replica.
    const load = Promise.all(
      Array.from({ length: 12 }, async (_, client) => {
        for (let i = next++; i < bodies.length; i = next++) {
          let reply: SettleReply | undefined;
          for (let attempt = 0; attempt < 200 && reply?.status !== 200; attempt++) {
            if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
            const replica = replicas[(i + client + attempt) % replicas.length] as Replica;
            reply = await postTo(replica.url, "/settle", bodies[i]);
            attempts.push(reply);
          }
          if (reply?.status === 200 && Date.now() > resumedAt) paidAfterResume++;
          finals[i] = reply as SettleReply;
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    await postgres.halt("immediate");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const away = await fetch(`${replicas[0]?.url}/readyz`);
    const awayBody = (await away.json()) as { failed: string[]; store: { reachable: boolean } };
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await postgres.resume();
    resumedAt = Date.now();
    await load;

    expect(away.status).toBe(503);
    expect(awayBody).toMatchObject({ failed: ["store"], store: { reachable: false } });
    const back = await fetch(`${replicas[0]?.url}/readyz`);
    expect(back.status).toBe(200);
    const counts = tally(attempts);
    console.log("settle attempts through a store outage:", counts, { paidAfterResume });
    for (const key of Object.keys(counts)) {
      expect(key).toMatch(
        /^(200|503 store_unavailable|503 settlement_pending|500 settlement_(failed|pending)|409 settlement_in_progress)$/,
      );
    }
    expect(counts["503 store_unavailable"] ?? 0).toBeGreaterThan(0);
    // The same replicas, never restarted, settle again once it is back.
    expect(paidAfterResume).toBeGreaterThan(0);
    for (const replica of replicas) expect(replica.child.exitCode).toBeNull();
    expect(tally(finals)).toEqual({ "200": bodies.length });
    expect(new Set(finals.map((r) => r.body.transactionHash)).size).toBe(bodies.length);
    // Every payment paid exactly once: one transaction each, one transfer each.
    expect(await sentBy(devnet, replicaSigners)).toBe(sent + bodies.length);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(
      payee + BigInt(bodies.length) * 1_000n,
    );
    for (const replica of replicas) {
      const health = (await (await fetch(`${replica.url}/health`)).json()) as {
        store: { reachable: boolean; signersLost: string[] };
      };
      expect(health.store).toMatchObject({ reachable: true, signersLost: [] });
    }
  }, 120_000);
});
