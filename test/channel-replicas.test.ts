/**
 * A claim is one transaction across replicas, and one whose replica died is followed like a
 * payment. Two `serve` replicas on one real PostgreSQL store and one anvil devnet, blocks mined by
 * hand, channels opened by the official client, the claims signed by our receiver authorizer:
 *
 * - The same claim asked of both replicas at once, in 5 rounds. Before: 2 transactions with 2
 *   different hashes in 5 of 5 rounds. Now: one transaction a round; both callers get its hash.
 * - Two claims batched by replica A, which is killed with SIGKILL right after the batch is
 *   broadcast. Once it is mined, replica B's retry of each claim answers the batch's hash and
 *   sends nothing. Before: B sent a third (no-op) transaction and answered its hash.
 * - The same, with the batch dropped from the pool after A died: B answers `settlement_pending`
 *   (only the key's holder may send it again); A, restarted, has its reconciler send the same
 *   bytes again with no retry; then B's retry answers that transaction. Before: B answered
 *   pending for a transaction that no longer existed, over every retry, and A followed nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, devAccounts } from "../src/evm/devnet/index.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
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

const PRICE = 1_000n;
const AUTHORIZER = devAccounts[7] as DevAccount;
const ENV = {
  FACILITATOR_RECEIVER_AUTHORIZER_KEY: AUTHORIZER.privateKey,
  FACILITATOR_RECONCILE_SECONDS: "1",
  FACILITATOR_RECONCILE_IDLE_SECONDS: "1",
};
const LEASE_SECONDS = 2;

let cluster: Cluster;
let devnet: Devnet;
let replicas: Replica[];
let dir: string;
let env: Record<string, string>;

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const signers = () => sentBy(devnet, replicaSigners.slice(0, 2));

/** Mines a block every 200 ms until `work` is done. */
async function whileMining<T>(work: Promise<T>): Promise<T> {
  let done = false;
  const mining = (async () => {
    while (!done) {
      await anvil().mine({ blocks: 1 });
      await sleep(200);
    }
  })();
  try {
    return await work;
  } finally {
    done = true;
    await mining;
  }
}

/** Asks again while the answer says someone else is on it (a claim held, a lease running out). */
async function settleWhenFree(url: string, body: unknown, seconds = 20): Promise<SettleReply> {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    const reply = await postTo(url, "/settle", body);
    const error = reply.body.error ?? (reply.body as { errorReason?: string }).errorReason;
    if (error !== "settlement_in_progress" || Date.now() > until) return reply;
    await sleep(200);
  }
}

/** The store's settlements whose key starts with `prefix`, newest first. */
async function stored(prefix: string) {
  const client = new pg.Client({ connectionString: cluster.store });
  client.on("error", () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ key: string; state: string; hashes: string[] }>(
      "SELECT key, state, hashes FROM facilitator_settlements WHERE key LIKE $1 || '%' ORDER BY updated_at DESC",
      [prefix],
    );
    return rows;
  } finally {
    await client.end();
  }
}

/** Waits until the store holds a broadcast settlement under `prefix`; its newest hash. */
async function broadcastUnder(prefix: string): Promise<Hex> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const row = (await stored(prefix)).find((r) => r.state === "broadcast" && r.hashes.length);
    if (row) return row.hashes.at(-1) as Hex;
    await sleep(100);
  }
  throw new Error(`nothing broadcast under ${prefix}`);
}

/** A funded channel of `payer` for the devnet's payee, and claim bodies for it. */
async function openChannel(payer: DevAccount) {
  const offer = batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: AUTHORIZER.address,
    price: PRICE,
  });
  const { claimRow } = officialChannel(devnet, payer, offer);
  const deposit = await officialPayload(devnet, payer, offer, 20);
  const [a] = replicas as [Replica];
  const opened = await whileMining(settleWhenFree(a.url, x402Request(offer, deposit)));
  expect(opened.body, JSON.stringify(opened.body)).toMatchObject({ success: true });
  return async (total: bigint) =>
    x402Request(managerRequirements(offer), {
      type: "claim",
      claims: [await claimRow(total * PRICE)],
    });
}

/** SIGKILLs replica A once the store holds a broadcast claim batch of it; the batch's hash. */
async function killAfterBroadcast(claims: readonly unknown[]): Promise<Hex> {
  const [a] = replicas as [Replica];
  for (const body of claims) void postTo(a.url, "/settle", body);
  const hash = await broadcastUnder("batch-claims:");
  a.child.kill("SIGKILL");
  await a.exited;
  return hash;
}

/** One claim each of two fresh channels, of `totals` (in prices). */
async function twoClaims(payers: readonly [number, number], totals: readonly [bigint, bigint]) {
  const [one, two] = await Promise.all(
    payers.map((i) => openChannel(devnet.payers[i] as DevAccount)),
  );
  return [await (one as ClaimOf)(totals[0]), await (two as ClaimOf)(totals[1])];
}
type ClaimOf = Awaited<ReturnType<typeof openChannel>>;

/** Replica A again, on the same key and store (it was killed). */
async function restartA(): Promise<void> {
  replicas[0] = await startReplica(
    devnet,
    cluster.store,
    replicaSigners[0] as DevAccount,
    LEASE_SECONDS,
    env,
  );
}

/** Each claim asked of replica B is answered with the batch's transaction `hash`. */
async function answeredWith(hash: Hex, bodies: readonly unknown[]): Promise<void> {
  const b = replicas[1] as Replica;
  for (const body of bodies) {
    const reply = await whileMining(settleWhenFree(b.url, body));
    expect(reply.body, JSON.stringify(reply.body)).toMatchObject({
      success: true,
      transaction: hash,
    });
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-channel-replicas-"));
  // Claims need no key (the contract pays them to the receiver only); a seller's key is listed
  // so the receiver authorizer is offered, as a seller's deployment would.
  const keys = path.join(dir, "api-keys.json");
  const seller = {
    name: "seller",
    key: "channel-seller-0123456789abcdef",
    receivers: [(devAccounts[9] as DevAccount).address],
  };
  writeFileSync(keys, JSON.stringify({ anonymous: true, keys: [seller] }));
  env = { ...ENV, FACILITATOR_API_KEYS_FILE: keys };
  cluster = await startCluster({ count: 2, leaseSeconds: LEASE_SECONDS, mining: "manual", env });
  ({ devnet, replicas } = cluster);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a claim across replicas", () => {
  test("the same claim asked of two replicas at once is sent once; both get its hash", async () => {
    const [a, b] = replicas as [Replica, Replica];
    const claim = await openChannel(devnet.payers[0] as DevAccount);
    for (let round = 1; round <= 5; round++) {
      const body = await claim(BigInt(round));
      const before = await signers();
      const [ra, rb] = await whileMining(
        Promise.all([settleWhenFree(a.url, body), settleWhenFree(b.url, body)]),
      );
      expect(ra.body, JSON.stringify(ra.body)).toMatchObject({ success: true });
      expect(rb.body, JSON.stringify(rb.body)).toMatchObject({ success: true });
      expect(rb.body.transaction).toBe(ra.body.transaction);
      expect(await signers(), `round ${round}`).toBe(before + 1);
    }
  }, 120_000);

  test("a batch broadcast by a replica killed with SIGKILL, then mined: the other answers it and sends nothing", async () => {
    const bodies = await twoClaims([1, 2], [3n, 4n]);
    const before = await signers();
    const hash = await killAfterBroadcast(bodies);
    await anvil().mine({ blocks: 1 });
    await answeredWith(hash, bodies);
    expect(await signers()).toBe(before + 1);
    await restartA();
  }, 120_000);

  test("dropped after its replica died: pending on the other, sent again by its key's restarted owner", async () => {
    const bodies = await twoClaims([3, 4], [5n, 6n]);
    const before = await signers();
    const hash = await killAfterBroadcast(bodies);
    await anvil().dropTransaction({ hash });
    const b = replicas[1] as Replica;
    const orphaned = await settleWhenFree(b.url, bodies[0]);
    expect(orphaned.body, JSON.stringify(orphaned.body)).toMatchObject({
      errorReason: "settlement_pending",
    });

    await restartA();
    // No retry: the restarted owner's reconciler sends the same bytes again, and they land.
    await whileMining(
      (async () => {
        const until = Date.now() + 30_000;
        while (Date.now() < until) {
          const batch = (await stored("batch-claims:")).find((r) => r.hashes.includes(hash));
          if (batch && batch.state !== "broadcast") return;
          await sleep(200);
        }
      })(),
    );
    const batch = (await stored("batch-claims:")).find((r) => r.hashes.includes(hash));
    expect(batch?.state).toMatch(/^(landed|answered)$/);
    await answeredWith(hash, bodies);
    expect(await signers()).toBe(before + 1);
  }, 120_000);
});
