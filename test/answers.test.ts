/**
 * One success per authorization, whatever fails (issue 19): a success is written down as answered
 * before it is handed over. On a real PostgreSQL store stopped between the transaction landing and
 * its answer, and with a settle killed (SIGKILL) while it waited for its receipt, each payment
 * gets exactly one success, from the request that follows the fault.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { PostgresStore } from "../src/store/postgres.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { runCli } from "./helpers/run-cli.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let postgres: Postgres;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet({ mining: "manual" }), startPostgres()]);
}, 90_000);
afterAll(async () => {
  await devnet?.stop();
  await postgres?.stop();
});

const mine = () =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

async function payment() {
  const payer = await payerHolding(devnet, 1_000n);
  const requirements = requirementsV2(devnet, { amount: "1000" });
  return { payload: await clientPayload(payer, requirements), requirements };
}

/** A payer funded while blocks are mined by hand. */
async function fundedPayment() {
  const funding = payment();
  for (let i = 0; i < 50; i++) {
    await mine();
    const done = await Promise.race([
      funding.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 100)),
    ]);
    if (done) break;
  }
  return funding;
}

function facilitatorWith(journal: Facilitator["journal"]) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiptPollMs: 50,
    journal,
  });
}

/** Settles `body` while blocks are mined by hand, mining until it answers. */
async function settleMining(
  facilitator: Facilitator,
  body: unknown,
  beforeMining?: () => Promise<void>,
) {
  const settling = handleSettle(facilitator, body, { waitUntil: "confirmed" });
  const sent = chainOf(devnet).getTransactionCount({
    address: devnet.facilitator.address,
    blockTag: "pending",
  });
  await sent;
  // The transaction is in the pool (or about to be): let the test break something, then mine.
  await new Promise((r) => setTimeout(r, 300));
  await beforeMining?.();
  for (let i = 0; i < 100; i++) {
    await mine();
    const done = await Promise.race([
      settling.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 100)),
    ]);
    if (done) break;
  }
  return settling;
}

describe("PostgreSQL stopped between the transaction landing and its answer", () => {
  test("that request is answered 503 pending with the hash; the retry gets the one success; the next, nonce_already_used", async () => {
    const url = await postgres.freshDatabase("answers_outage");
    const store = await PostgresStore.open(url, {
      signers: [devnet.facilitator.address],
      leaseMs: 2_000,
    });
    const facilitator = facilitatorWith(store);
    try {
      const body = await fundedPayment();
      const payee = await tokenBalance(devnet, devnet.payee.address);
      // The broadcast is written down; then the store goes away before the receipt comes.
      const first = await settleMining(facilitator, body, () => postgres.halt("fast"));
      expect(first.status).toBe(503);
      expect(first.body).toMatchObject({ success: false, error: "settlement_pending" });
      const hash = first.body.transactionHash as string;
      expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
      // It landed: the payer paid.
      expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 1_000n);
      await postgres.resume();
      const retry = await handleSettle(facilitator, body);
      expect(retry.body).toMatchObject({ success: true, transactionHash: hash });
      const again = await handleSettle(facilitator, body);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
    } finally {
      await postgres.resume().catch(() => undefined);
      await store.close();
    }
  }, 90_000);
});

describe("a settle killed (SIGKILL) while it waits for its receipt", () => {
  test("file journal: the next run follows its transaction and answers the one success; the one after, nonce_already_used", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-answers-"));
    const file = path.join(dir, "payment.json");
    const env = {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
      FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
      FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
    };
    try {
      await writeFile(file, JSON.stringify(await fundedPayment()));
      const us = devnet.facilitator.address;
      const sent = await chainOf(devnet).getTransactionCount({ address: us, blockTag: "pending" });
      const first = spawnCli(["settle", file, "-q"], env);
      for (let i = 0; i < 200; i++) {
        if (
          (await chainOf(devnet).getTransactionCount({ address: us, blockTag: "pending" })) > sent
        )
          break;
        await new Promise((r) => setTimeout(r, 25));
      }
      // Written down and sent; killed before any answer.
      first.kill("SIGKILL");
      await new Promise((r) => first.once("exit", r));
      await mine();
      const retry = await runCli(["settle", file, "-q"], env);
      expect(retry.code, retry.stdout + retry.stderr).toBe(0);
      const answer = JSON.parse(retry.stdout) as { success: boolean; transactionHash: string };
      expect(answer.success).toBe(true);
      const again = await runCli(["settle", file, "-q"], env);
      expect(JSON.parse(again.stdout)).toMatchObject({
        success: false,
        error: "nonce_already_used",
      });
      // One transaction, the one sent before the kill.
      expect(await chainOf(devnet).getTransactionCount({ address: us })).toBe(sent + 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** The built CLI, as a child process of its own (so a test can kill it). */
function spawnCli(args: string[], env: Record<string, string>) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  return spawn(process.execPath, [path.join(process.cwd(), "bin/facilitator.js"), ...args], {
    env: { ...clean, ...env, FORCE_COLOR: "0" },
    stdio: "ignore",
  });
}
