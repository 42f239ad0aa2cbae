/**
 * The wasted-gas budget bounds payers with a history too (security review): a history costs an
 * attacker one unit paid to itself, so past the budget a payer is allowed one wasted settlement
 * per settlement of its that landed with us (up to the payer throttle's limit), and past twice the
 * budget no one is served. Real anvil, a front-runner that cancels the payers' authorizations
 * ahead of our settlements, and both stores: the history is built by one run and attacked in the
 * next (a restart), so the allowance is the store's count.
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SettlementStore } from "../src/core/store.js";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { chainOf, payerHolding } from "./helpers/chain.js";
import { facilitatorOn, postJson } from "./helpers/facilitator.js";
import { frontRun } from "./helpers/front-run.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;
let postgres: Postgres;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  proxy = await startRpcProxy(devnet.rpcUrl);
}, 90_000);
afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
  await postgres?.stop();
});

type Kind = "journal file" | "postgres";

/** Opens the store `where` names (a file, a database URL): again after a restart. */
function opener(kind: Kind, where: string): () => Promise<SettlementStore> {
  return kind === "postgres"
    ? () => PostgresStore.open(where, { signers: [devnet.facilitator.address] })
    : async () => new Journal(where);
}

let databases = 0;
async function storeFor(kind: Kind): Promise<() => Promise<SettlementStore>> {
  if (kind === "postgres")
    return opener(kind, await postgres.freshDatabase(`budget_${++databases}`));
  const dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-budget-"));
  return opener(kind, path.join(dir, "journal.jsonl"));
}

async function serving(journal: SettlementStore, budget?: bigint) {
  const facilitator = facilitatorOn(devnet, {
    rpcUrls: [proxy.url],
    journal,
    ...(budget === undefined ? {} : { wastedGasBudget: budget }),
  });
  const server = await startServer(createHandler(facilitator), { port: 0 });
  return { facilitator, server };
}

async function pay(server: RunningServer, payer: DevAccount, amount = "1000") {
  const requirements = requirementsV2(devnet, { amount });
  return postJson(server, "/settle", {
    payload: await clientPayload(payer, requirements),
    requirements,
  });
}

interface Attempt {
  readonly who: string;
  readonly code: string;
  readonly status: number;
  readonly retryAfter: string | null;
  /** Gas our settlements had wasted (their receipts) when this one was asked for. */
  readonly wastedBefore: bigint;
  /** The gas this one wasted, if it reverted. */
  readonly gas: bigint;
}

/**
 * The attack: payers build a history (`landed[i]` settlements of one unit each) in one run; in the
 * next (a restart on the same store) fresh payers each front-run spend the budget, then each payer
 * with a history turns hostile and asks for `tries` settlements, every one front-run. `honest`
 * settled once in the first run, is never front-run, and pays once the budget is spent and once
 * at the end.
 */
async function attack(kind: Kind, budget: bigint, landed: readonly number[], tries: number) {
  const open = await storeFor(kind);
  // One at a time: they are funded from one account.
  const hostile: DevAccount[] = [];
  for (const n of landed) hostile.push(await payerHolding(devnet, BigInt(n) + 10_000n));
  const honest = await payerHolding(devnet, 10_000n);
  const first = await open();
  const before = await serving(first);
  for (const [i, payer] of hostile.entries()) {
    for (let n = 0; n < (landed[i] as number); n++) {
      expect((await pay(before.server, payer, "1")).body).toMatchObject({ success: true });
    }
  }
  expect((await pay(before.server, honest, "1")).body).toMatchObject({ success: true });
  await before.server.close();
  await before.facilitator.answers.flush();
  await first.close();

  const store = await open();
  const { server } = await serving(store, budget);
  const keys = new Map<string, Hex>();
  const attempts: Attempt[] = [];
  let wasted = 0n;
  const attempt = async (who: string, payer: DevAccount) => {
    const reply = await pay(server, payer);
    let gas = 0n;
    if (reply.body.error === "settlement_failed") {
      const hash = reply.body.transactionHash as Hex;
      const receipt = await chainOf(devnet).getTransactionReceipt({ hash });
      expect(receipt.status).toBe("reverted");
      gas = receipt.gasUsed;
    }
    const code = String(reply.body.error ?? "success");
    attempts.push({
      who,
      code,
      status: reply.status,
      retryAfter: reply.retryAfter,
      wastedBefore: wasted,
      gas,
    });
    wasted += gas;
    return reply;
  };
  try {
    frontRun(devnet, proxy, keys);
    // Fresh payers spend the budget: the first refused one ends this phase.
    for (let i = 0; i < 100; i++) {
      const fresh = await payerHolding(devnet, 1_000n);
      keys.set(fresh.address.toLowerCase(), fresh.privateKey);
      if ((await attempt("fresh", fresh)).status === 429) break;
    }
    expect(wasted).toBeGreaterThanOrEqual(budget);
    const honestPastBudget = await attempt("honest", honest);
    for (const [i, payer] of hostile.entries()) {
      keys.set(payer.address.toLowerCase(), payer.privateKey);
      for (let n = 0; n < tries; n++) await attempt(`payer ${i}`, payer);
    }
    const honestAtEnd = await attempt("honest", honest);
    const past = attempts.filter((a) => a.gas > 0n && a.wastedBefore >= budget);
    const measured = {
      reverted: attempts.filter((a) => a.gas > 0n).length,
      revertedPastBudget: past.length,
      gasPastBudget: past.reduce((sum, a) => sum + a.gas, 0n),
      sentPastTwice: attempts.filter((a) => a.gas > 0n && a.wastedBefore >= 2n * budget).length,
      wasted,
    };
    console.log(
      `${kind}, budget ${budget}, histories ${landed.join(",")}: ${measured.reverted} reverted, ${measured.revertedPastBudget} past the budget (${measured.gasPastBudget} gas, ${Number((measured.gasPastBudget * 100n) / budget) / 100}x it), ${measured.sentPastTwice} sent past twice it; ${wasted} gas wasted in all`,
    );
    const perPayer = hostile.map((_, i) => {
      const mine = attempts.filter((a) => a.who === `payer ${i}`);
      return { reverted: mine.filter((a) => a.gas > 0n).length, codes: mine.map((a) => a.code) };
    });
    return { attempts, measured, perPayer, honestPastBudget, honestAtEnd };
  } finally {
    proxy.intercept = () => undefined;
    await server.close();
    await store.close();
  }
}

describe.each(["journal file", "postgres"] as const)("%s store", (kind) => {
  test("the attack, scaled down: each payer with one landed settlement wastes at most one past the budget, and nothing is sent past twice the budget; an honest known payer is served until then", async () => {
    const budget = 100_000n;
    const { measured, perPayer, honestPastBudget, honestAtEnd } = await attack(
      kind,
      budget,
      [1, 1, 1, 1, 1, 1],
      4,
    );
    for (const payer of perPayer) {
      expect(payer.reverted).toBeLessThanOrEqual(1);
      // Every other try waits: 429 payer_throttled.
      expect(payer.codes.filter((c) => c !== "settlement_failed")).toEqual(
        Array(4 - payer.reverted).fill("payer_throttled"),
      );
    }
    expect(measured.revertedPastBudget).toBeLessThanOrEqual(perPayer.length);
    expect(measured.sentPastTwice).toBe(0);
    // Six payers at one each would reach twice the budget: the ceiling stops them.
    expect(measured.wasted).toBeGreaterThanOrEqual(2n * budget);
    expect(honestPastBudget.body).toMatchObject({ success: true });
    expect(honestAtEnd.status).toBe(429);
    expect(honestAtEnd.body).toMatchObject({ success: false, error: "payer_throttled" });
    expect(String(honestAtEnd.body.message)).toMatch(/twice the budget of 100,000; every payer/);
    expect(Number(honestAtEnd.retryAfter)).toBeGreaterThan(0);
  }, 180_000);

  test("a payer gets one wasted settlement past the budget per settlement of its that landed, up to the throttle limit (3)", async () => {
    const budget = 200_000n;
    const { measured, perPayer, honestAtEnd } = await attack(kind, budget, [2, 5], 5);
    expect(perPayer.map((p) => p.reverted)).toEqual([2, 3]);
    for (const payer of perPayer) {
      expect(payer.codes.slice(payer.reverted).every((c) => c === "payer_throttled")).toBe(true);
    }
    expect(measured.sentPastTwice).toBe(0);
    expect(measured.wasted).toBeLessThan(2n * budget);
    expect(honestAtEnd.body).toMatchObject({ success: true });
  }, 180_000);
});
