/**
 * Solana settlements over two `facilitator serve` replicas sharing one PostgreSQL store and one
 * fee payer (Solana has no nonces, so replicas may share it), against the local Solana devnet:
 * one transaction is settled once whichever replicas it reaches, a replay on the other replica is
 * refused, and a payer's in-flight total is held against its balance across replicas.
 */
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bytesToBase58 } from "../src/protocol/base58.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { postTo, type Replica, stopReplicas, tally } from "./helpers/replicas.js";
import { startServe } from "./helpers/serve.js";
import {
  devnetPayment,
  svmClientPayload,
  svmLamports,
  svmRequirementsV2,
  svmTokenBalance,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let postgres: Postgres;
const replicas: Replica[] = [];

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([
    startSvmDevnet({ slotMs: 100, payers: 3 }),
    startPostgres(),
  ]);
  const store = await postgres.freshDatabase("svm_replicas");
  for (let i = 0; i < 2; i++) {
    const serving = await startServe([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_SVM_PRIVATE_KEY: devnet.feePayer.secretKey,
      FACILITATOR_STORE: store,
      FACILITATOR_STORE_LEASE_SECONDS: "5",
    });
    replicas.push({ ...serving, signer: undefined as never });
  }
}, 60_000);

afterAll(async () => {
  await stopReplicas(replicas);
  await postgres?.stop();
  await devnet?.stop();
});

const tokenBalance = (owner: string) => svmTokenBalance(devnet, owner);

const lamports = (owner: string) => svmLamports(devnet, owner);

const replica = (i: number) => replicas[i % replicas.length] as Replica;
const payer = (n: number) => devnet.payers[n] as SvmDevKey;

describe("Solana on two replicas, one store", () => {
  test("30 settles of one transaction spread over both: one success, one transfer, one fee", async () => {
    const requirements = svmRequirementsV2(devnet, { amount: "250" });
    const payload = await svmClientPayload(devnet, payer(0), requirements);
    const [before, fees] = await Promise.all([
      tokenBalance(devnet.payee.address),
      lamports(devnet.feePayer.address),
    ]);
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        postTo(replica(i).url, "/settle", { payload, requirements }),
      ),
    );
    const counts = tally(replies);
    expect(counts["200"]).toBe(1);
    expect(
      Object.keys(counts).every((k) =>
        ["200", "409 settlement_in_progress", "409 duplicate_settlement"].includes(k),
      ),
    ).toBe(true);
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 250n);
    expect(await lamports(devnet.feePayer.address)).toBe(fees - 10_001n);
    // Once settled, each replica refuses it. The turn is given back just after the success was
    // answered (core/settle-loop.ts): a retry in between is told to retry, never paid.
    for (const r of replicas) {
      let again = await postTo(r.url, "/settle", { payload, requirements });
      for (let i = 0; i < 50 && again.body.error === "settlement_in_progress"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        again = await postTo(r.url, "/settle", { payload, requirements });
      }
      expect(again).toMatchObject({ status: 409, body: { error: "duplicate_settlement" } });
    }
  });

  test("a payer's whole-balance payments spread over both replicas: one paid, nothing fails on chain", async () => {
    const from = payer(1);
    expect(await tokenBalance(from.address)).toBe(PAYER_USDC_BALANCE);
    const payments = await Promise.all(
      Array.from({ length: 10 }, () => devnetPayment(devnet, from, PAYER_USDC_BALANCE)),
    );
    const fees = await lamports(devnet.feePayer.address);
    const replies = await Promise.all(
      payments.map((p, i) =>
        postTo(replica(i).url, "/settle", { payload: p.payload, requirements: p.requirements }),
      ),
    );
    const counts = tally(replies);
    // On a failure, the answers in full: which replica said what, and its message.
    const said = JSON.stringify(replies.map((r, i) => ({ replica: i % 2, ...r })));
    expect(counts["200"], said).toBe(1);
    expect(
      Object.keys(counts).every((k) =>
        ["200", "400 insufficient_funds", "400 simulation_failed"].includes(k),
      ),
      said,
    ).toBe(true);
    expect(await tokenBalance(from.address)).toBe(0n);
    expect(await lamports(devnet.feePayer.address)).toBe(fees - 10_001n);
  });

  test("/metrics counts the Solana transactions, their fees and the requests by cluster", async () => {
    const texts = await Promise.all(
      replicas.map(async (r) => (await fetch(`${r.url}/metrics`)).text()),
    );
    /** The sum over both replicas of the samples of `metric` whose labels include `labels`. */
    const total = (metric: string, labels: string[]) =>
      texts
        .flatMap((t) => t.split("\n"))
        .filter((line) => line.startsWith(`${metric}{`) && labels.every((l) => line.includes(l)))
        .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    const feePayer = `fee_payer="${devnet.feePayer.address}"`;
    const network = `network="${devnet.network}"`;
    // One payment landed in each test above.
    for (const outcome of ["sent", "confirmed"]) {
      expect(
        total("facilitator_svm_transactions_total", [network, feePayer, `outcome="${outcome}"`]),
      ).toBe(2);
    }
    expect(total("facilitator_svm_transactions_total", ['outcome="failed"'])).toBe(0);
    expect(total("facilitator_svm_fees_lamports_total", [network, feePayer])).toBe(20_002);
    // Where the settles' time went: both landed ones wrote their record and reached the chain;
    // refusals made in the settle's own checks are timed too.
    const stage = (name: string) => [network, `stage="${name}"`];
    expect(total("facilitator_settle_stage_seconds_count", stage("journal"))).toBe(2);
    expect(total("facilitator_settle_stage_seconds_count", stage("chain"))).toBe(2);
    expect(total("facilitator_settle_stage_seconds_count", stage("checks"))).toBeGreaterThanOrEqual(
      2,
    );
    expect(total("facilitator_settle_stage_seconds_sum", stage("chain"))).toBeGreaterThan(0);
    expect(total("facilitator_requests_total", ['op="settle"', network, 'outcome="success"'])).toBe(
      2,
    );
    const lamports = await svmLamports(devnet, devnet.feePayer.address, "confirmed");
    expect(total("facilitator_svm_fee_payer_lamports", [network, feePayer])).toBe(
      2 * Number(lamports),
    );
    const ready = await fetch(`${replica(0).url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      feePayers: [{ network: devnet.network, feePayer: devnet.feePayer.address, ok: true }],
    });
  });

  test("/readyz fails while a fee payer lacks the SOL to pay fees", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
    const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
    const broke = await startServe([], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_SVM_PRIVATE_KEY: bytesToBase58(Buffer.concat([seed, pub])),
    });
    try {
      const ready = await fetch(`${broke.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        ready: false,
        failed: ["fee_payer_balance"],
        feePayers: [{ feePayer: bytesToBase58(pub), ok: false, lamports: "0" }],
      });
    } finally {
      await stopReplicas([{ ...broke, signer: undefined as never }]);
    }
  });
});
