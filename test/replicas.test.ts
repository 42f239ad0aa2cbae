/**
 * Three `serve` replicas, each with its own key, on one real PostgreSQL store and one real anvil:
 * one authorization POSTed to all of them is broadcast once; hundreds of distinct payments spread
 * over them land exactly once with no nonce trouble; a replica may not take a key another holds;
 * a payment-identifier answers the same from every replica.
 */
import pg from "pg";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Devnet } from "../src/evm/devnet/index.js";
import { chainOf, payerHolding, poolDrained, tokenBalance } from "./helpers/chain.js";
import {
  type Cluster,
  postTo,
  type Replica,
  replicaSigners,
  sentBy,
  startCluster,
  tally,
} from "./helpers/replicas.js";
import { runCli } from "./helpers/run-cli.js";
import { startServe } from "./helpers/serve.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let cluster: Cluster;
let devnet: Devnet;
let store: string;
let replicas: Replica[] = [];

async function payment(payer: number, amount = 10_000n, extensions?: Record<string, unknown>) {
  const account = devnet.payers[payer];
  if (!account) throw new Error(`no payer ${payer}`);
  const requirements = requirementsV2(devnet, { amount: amount.toString() });
  const payload = await clientPayload(account, requirements);
  // The reference dialect: HTTP statuses say how it went.
  return { payload: extensions ? { ...payload, extensions } : payload, requirements };
}

beforeAll(async () => {
  cluster = await startCluster({ count: 3 });
  ({ devnet, store, replicas } = cluster);
}, 90_000);

afterAll(() => cluster?.stop());

describe("one authorization POSTed to three replicas at once", () => {
  test.each(["confirmed", "submitted"])(
    "waitUntil %s: 50 settles, one broadcast, one success",
    async (waitUntil) => {
      const body = { ...(await payment(0)), waitUntil };
      const payee = await tokenBalance(devnet, devnet.payee.address);
      const sent = await sentBy(devnet, replicaSigners);
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          postTo((replicas[i % 3] as Replica).url, "/settle", body),
        ),
      );
      const counts = tally(replies);
      console.log(`50 settles of one authorization (${waitUntil}):`, counts);
      expect(counts["200"]).toBe(1);
      for (const key of Object.keys(counts)) {
        expect(key).toMatch(/^(200|409 settlement_in_progress|400 nonce_already_used)$/);
      }
      // Whatever any replica broadcast is mined (automine) before it is counted.
      await Promise.all(replicaSigners.map((signer) => poolDrained(devnet, signer.address)));
      expect(await sentBy(devnet, replicaSigners)).toBe(sent + 1);
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 10_000n);
      // Later retries, on any replica, are told it was settled, and send nothing.
      const later = [];
      for (const replica of replicas) later.push(await postTo(replica.url, "/settle", body));
      expect(tally(later)).toEqual({ "400 nonce_already_used": 3 });
      expect(await sentBy(devnet, replicaSigners)).toBe(sent + 1);
    },
    60_000,
  );
});

describe("300 distinct payments spread over three replicas", () => {
  test("each lands exactly once; no nonce errors", async () => {
    const bodies = await Promise.all(
      Array.from({ length: 300 }, (_, i) => payment(i % devnet.payers.length, 1_000n)),
    );
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const sent = await sentBy(devnet, replicaSigners);
    const started = performance.now();
    const replies = await Promise.all(
      bodies.map((body, i) => postTo((replicas[i % 3] as Replica).url, "/settle", body)),
    );
    const seconds = (performance.now() - started) / 1000;
    const counts = tally(replies);
    console.log(`300 payments over 3 replicas in ${seconds.toFixed(1)} s:`, counts);
    expect(counts).toEqual({ "200": 300 });
    const hashes = new Set(replies.map((r) => r.body.transactionHash));
    expect(hashes.size).toBe(300);
    expect(await sentBy(devnet, replicaSigners)).toBe(sent + 300);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 300n * 1_000n);
  }, 120_000);
});

describe("a payer racing its own balance over three replicas", () => {
  test("30 payments of its whole balance at once, 3 rounds: 3 land, nothing reverts", async () => {
    const rpc = chainOf(devnet);
    const sent = await sentBy(devnet, replicaSigners);
    const hashes: Hex[] = [];
    const codes: string[] = [];
    for (let round = 0; round < 3; round++) {
      const payer = await payerHolding(devnet, 1_000n);
      const requirements = requirementsV2(devnet, { amount: "1000" });
      const bodies = await Promise.all(
        Array.from({ length: 30 }, async () => ({
          payload: await clientPayload(payer, requirements),
          requirements,
        })),
      );
      const replies = await Promise.all(
        bodies.map((body, i) => postTo((replicas[i % 3] as Replica).url, "/settle", body)),
      );
      for (const reply of replies) {
        codes.push(reply.status === 200 ? "200" : `${reply.status} ${reply.body.error}`);
        if (reply.body.transactionHash) hashes.push(reply.body.transactionHash);
      }
      expect(await tokenBalance(devnet, payer.address)).toBe(0n);
    }
    const receipts = await Promise.all(
      hashes.map((hash) => rpc.getTransactionReceipt({ hash }).catch(() => undefined)),
    );
    const reverted = receipts.filter((r) => r?.status === "reverted").length;
    const counts = tally(
      codes.map((c) => ({ status: Number(c.split(" ")[0]), body: { error: c.split(" ")[1] } })),
    );
    console.log("hostile payer over 3 replicas, 3 rounds of 30:", counts, { reverted });
    expect(counts["200"]).toBe(3);
    expect(reverted).toBe(0);
    expect(await sentBy(devnet, replicaSigners)).toBe(sent + 3);
  }, 120_000);
});

describe("a key belongs to one replica", () => {
  test("a fourth replica with the first one's key is refused, naming the holder", async () => {
    const taken = startServe([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
      FACILITATOR_STORE: store,
      FACILITATOR_STORE_LEASE_SECONDS: "5",
    });
    const error = await taken.then(
      (serving) => {
        serving.child.kill("SIGKILL");
        return "started";
      },
      (e: Error) => e.message,
    );
    expect(error).toMatch(/serve exited 2/);
    expect(error).toContain(devnet.facilitator.address.toLowerCase());
    // Said at once, before the wait of one lease and a second; then refused: its own key.
    expect(error).toMatch(/"event":"waiting_for_signer"/);
    expect(error).toContain('"waitSeconds":6');
    // It waited the lease and a second (6 s), or a little longer on a busy machine.
    const waited =
      /still after (\d+) s of waiting: that process runs and renews its lease; give each replica its own key/.exec(
        error,
      );
    expect(Number(waited?.[1]), error).toBeGreaterThanOrEqual(6);
    expect(error).not.toContain(devnet.facilitator.privateKey.slice(2));
  }, 30_000);

  test("doctor reads the store without taking anything: the key is held by a running replica", async () => {
    const { code, stdout } = await runCli(["doctor", "--json"], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
      FACILITATOR_STORE: store,
    });
    const report = JSON.parse(stdout) as {
      findings: { area: string; level: string; message: string }[];
    };
    const about = report.findings.filter((f) => f.area === "store");
    expect(about[0]).toMatchObject({ level: "ok" });
    expect(about[0]?.message).toMatch(/schema version \d+, nothing unsettled/);
    expect(about[1]).toMatchObject({ level: "warning" });
    expect(about[1]?.message).toContain(devnet.facilitator.address.toLowerCase());
    expect(code).toBe(1);
    // It took no lease: the replica still holds its key.
    const health = (await (await fetch(`${replicas[0]?.url}/health`)).json()) as {
      store: { signersHeld: string[] };
    };
    expect(health.store.signersHeld).toEqual([devnet.facilitator.address.toLowerCase()]);
  });

  test("/health names the store and the signer this replica holds", async () => {
    const response = await fetch(`${replicas[1]?.url}/health`);
    const health = (await response.json()) as { store?: Record<string, unknown> };
    expect(health.store).toMatchObject({
      shared: true,
      reachable: true,
      signersHeld: [replicaSigners[1]?.address.toLowerCase()],
      signersLost: [],
    });
    expect(JSON.stringify(health.store)).not.toContain("password");
  });
});

describe("the schema", () => {
  test("a store migrated by a newer facilitator is refused, naming both versions", async () => {
    const url = await cluster.postgres.freshDatabase("newer");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(
      "CREATE TABLE facilitator_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO facilitator_migrations (version) VALUES (99)",
    );
    await client.end();
    const error = await startServe([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.payee.privateKey,
      FACILITATOR_STORE: url,
    }).then(
      (serving) => {
        serving.child.kill("SIGKILL");
        return "started";
      },
      (e: Error) => e.message,
    );
    expect(error).toMatch(/serve exited 2/);
    expect(error).toMatch(/schema is version 99, newer than this facilitator's \(\d+\)/);
  }, 30_000);
});

describe("payment-identifier across replicas", () => {
  const id = "pay_replicas_0123456789abcdef";
  const extension = (value: string) => ({
    "payment-identifier": { info: { required: false, id: value } },
  });

  test("the same id and request: the first answer, from any replica; another request: 409", async () => {
    const body = await payment(1, 10_000n, extension(id));
    const first = await postTo(replicas[0]?.url ?? "", "/settle", body);
    expect(first.status).toBe(200);
    const again = await Promise.all(replicas.map((r) => postTo(r.url, "/settle", body)));
    for (const reply of again) {
      expect(reply.status).toBe(200);
      expect(reply.body.transactionHash).toBe(first.body.transactionHash);
    }
    const other = await payment(1, 20_000n, extension(id));
    const conflict = await postTo(replicas[2]?.url ?? "", "/settle", other);
    expect(conflict).toMatchObject({ status: 409, body: { error: "idempotency_conflict" } });
    // The other payment with a fresh id settles: the conflict sent nothing.
    const fresh = await postTo(replicas[2]?.url ?? "", "/settle", {
      ...other,
      payload: { ...other.payload, extensions: extension("pay_replicas_fresh_0123456789") },
    });
    expect(fresh.status).toBe(200);
  }, 60_000);

  test("a malformed id is invalid_request, and nothing is sent", async () => {
    const body = await payment(1, 10_000n, extension("short"));
    const reply = await postTo(replicas[1]?.url ?? "", "/settle", body);
    expect(reply).toMatchObject({ status: 400, body: { error: "invalid_request" } });
  });
});
