/** The payer throttle's and the gas at risk's windows: who is refused, for how long, and who is not. */
import type { Address } from "viem";
import { describe, expect, test } from "vitest";
import { SettlementRate } from "../src/core/settle-rate.js";
import type { ExpectedTransfer } from "../src/core/store.js";
import { PayerThrottle } from "../src/core/throttle.js";
import { GasAtRisk } from "../src/evm/chain/gas-at-risk.js";
import { Journal } from "../src/store/journal.js";

const PAYER = "0x00000000000000000000000000000000000000aA";
const MINUTE = 60_000;

describe("PayerThrottle", () => {
  test("refuses after the limit, until the oldest revert leaves the window", () => {
    const throttle = new PayerThrottle({ limit: 3, windowMs: 10 * MINUTE });
    const t0 = 1_000_000;
    throttle.charge(1, PAYER, t0);
    throttle.charge(1, PAYER, t0 + MINUTE);
    expect(throttle.refusal(1, PAYER, t0 + MINUTE)).toBeUndefined();
    throttle.charge(1, PAYER.toLowerCase(), t0 + 2 * MINUTE);

    const refused = throttle.refusal(1, PAYER, t0 + 2 * MINUTE);
    expect(refused).toMatchObject({ code: "payer_throttled", retryAfterSeconds: 8 * 60 });
    expect(refused?.message).toContain("3 settlements from");
    // Another chain, another payer: not held back.
    expect(throttle.refusal(8453, PAYER, t0 + 2 * MINUTE)).toBeUndefined();
    expect(throttle.refusal(1, `0x${"b".repeat(40)}`, t0 + 2 * MINUTE)).toBeUndefined();
    // The first revert leaves the window after 10 minutes: two remain, under the limit.
    expect(throttle.refusal(1, PAYER, t0 + 10 * MINUTE - 1)).toBeDefined();
    expect(throttle.refusal(1, PAYER, t0 + 10 * MINUTE)).toBeUndefined();
  });
});

describe("GasAtRisk", () => {
  const ASSET = "0x00000000000000000000000000000000000000C0";
  const HOUR = 60 * MINUTE;
  const waste = (payer: string, gas: bigint, cause: "reverted" | "out-of-gas" | "no-transfer") => ({
    payer,
    asset: ASSET,
    gas,
    cause,
  });
  const payer = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;

  test("past the chain's budget, payers with no settlement wait until enough waste ages out; known ones do not", async () => {
    const told: unknown[] = [];
    const risk = new GasAtRisk(new PayerThrottle(), {
      budgetGas: 100_000n,
      onWaste: (chainId, w) => told.push([chainId, w.gas]),
    });
    const t0 = 1_000_000;
    risk.settled(1, payer(99), ASSET);
    risk.charge(1, waste(payer(1), 40_000n, "reverted"), t0);
    risk.charge(1, waste(payer(2), 40_000n, "reverted"), t0 + MINUTE);
    expect(await risk.refusal(1, payer(3), ASSET, t0 + MINUTE)).toBeUndefined();
    risk.charge(1, waste(payer(4), 40_000n, "reverted"), t0 + 2 * MINUTE);
    expect(risk.wastedGas(1, t0 + 2 * MINUTE)).toBe(120_000n);
    const refused = await risk.refusal(1, payer(3), ASSET, t0 + 2 * MINUTE);
    // Under the budget again once the first 40,000 leave the window.
    expect(refused).toMatchObject({ code: "payer_throttled", retryAfterSeconds: 58 * 60 });
    expect(refused?.message).toContain("wasted 120,000 gas in the last 60 min");
    expect(await risk.refusal(1, payer(99), ASSET, t0 + 2 * MINUTE)).toBeUndefined();
    // Another chain has its own budget.
    expect(await risk.refusal(8453, payer(3), ASSET, t0 + 2 * MINUTE)).toBeUndefined();
    expect(await risk.refusal(1, payer(3), ASSET, t0 + HOUR)).toBeUndefined();
    expect(told).toEqual([
      [1, 40_000n],
      [1, 40_000n],
      [1, 40_000n],
    ]);
  });

  test("a payer the store remembers is served past the budget; waste from other replicas counts but is not told again", async () => {
    const told: unknown[] = [];
    // A restart: the settlement was answered by an earlier run, into the same store.
    const journal = new Journal();
    const transfer = { token: ASSET, from: payer(7), to: payer(8), value: "1" } as ExpectedTransfer;
    await journal.recordSend(
      { key: "k", network: "eip155:1", signer: payer(9) as Address, txNonce: 0, expect: transfer },
      "0x01",
      "0x02",
    );
    await journal.markAnswered("k");
    const risk = new GasAtRisk(new PayerThrottle(), {
      budgetGas: 10_000n,
      settlementsOf: (chainId, who, atMost) =>
        journal.settlementsOf(`eip155:${chainId}`, who, atMost),
      onWaste: (_chainId, w) => told.push(w),
    });
    const now = Date.now();
    risk.record(1, waste(payer(1), 15_000n, "reverted"), now - MINUTE, now);
    expect(told).toEqual([]);
    expect(await risk.refusal(1, payer(2), ASSET, now)).toMatchObject({ code: "payer_throttled" });
    expect(await risk.refusal(1, payer(7), ASSET, now)).toBeUndefined();
  });

  test("past the budget a payer is served while its waste in the hour is under its landed settlements, counting at most the throttle limit", async () => {
    const risk = new GasAtRisk(new PayerThrottle({ limit: 3 }), { budgetGas: 100_000n });
    const t0 = 1_000_000;
    risk.settled(1, payer(7), ASSET, t0);
    for (let i = 0; i < 5; i++) risk.settled(1, payer(8), ASSET, t0);
    risk.charge(1, waste(payer(7), 10_000n, "reverted"), t0);
    risk.charge(1, waste(payer(1), 100_000n, "reverted"), t0 + 10 * MINUTE);
    // Its revert left the throttle's 10 minutes, not the budget's hour: one landed, one wasted.
    const refused = await risk.refusal(1, payer(7), ASSET, t0 + 20 * MINUTE);
    // Free once its own waste ages out (t0 + 60 min), before the chain is under budget (t0 + 70).
    expect(refused).toMatchObject({ code: "payer_throttled", retryAfterSeconds: 40 * 60 });
    expect(refused?.message).toContain(`${payer(7)} has 1 and wasted 1`);
    expect(await risk.refusal(1, payer(7), ASSET, t0 + HOUR)).toBeUndefined();
    // Five landed count as three (the throttle's limit), reverts spaced past the throttle's window.
    for (const minutes of [11, 22]) {
      expect(await risk.refusal(1, payer(8), ASSET, t0 + minutes * MINUTE)).toBeUndefined();
      risk.charge(1, waste(payer(8), 1_000n, "reverted"), t0 + minutes * MINUTE);
    }
    expect(await risk.refusal(1, payer(8), ASSET, t0 + 33 * MINUTE)).toBeUndefined();
    risk.charge(1, waste(payer(8), 1_000n, "reverted"), t0 + 33 * MINUTE);
    expect(await risk.refusal(1, payer(8), ASSET, t0 + 34 * MINUTE)).toMatchObject({
      code: "payer_throttled",
    });
    // No history: none.
    expect(await risk.refusal(1, payer(2), ASSET, t0 + 20 * MINUTE)).toMatchObject({
      code: "payer_throttled",
    });
  });

  test("past twice the budget every payer waits, known ones too, until the waste is under twice the budget again", async () => {
    const risk = new GasAtRisk(new PayerThrottle(), { budgetGas: 100_000n });
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) risk.settled(1, payer(7), ASSET, t0);
    risk.charge(1, waste(payer(1), 120_000n, "reverted"), t0);
    expect(await risk.refusal(1, payer(7), ASSET, t0 + MINUTE)).toBeUndefined();
    risk.charge(1, waste(payer(2), 90_000n, "reverted"), t0 + 10 * MINUTE);
    const refused = await risk.refusal(1, payer(7), ASSET, t0 + 20 * MINUTE);
    expect(refused).toMatchObject({ code: "payer_throttled", retryAfterSeconds: 40 * 60 });
    expect(refused?.message).toContain(
      "wasted 210,000 gas in the last 60 min (reverted, ran out of gas or moved nothing), at least twice the budget of 100,000; every payer is refused for 2400 s",
    );
    // 90,000 left: under the budget, everyone is served.
    expect(await risk.refusal(1, payer(7), ASSET, t0 + HOUR)).toBeUndefined();
    expect(await risk.refusal(1, payer(3), ASSET, t0 + HOUR)).toBeUndefined();
  });

  test("an asset: refused at once when it moved nothing; out of gas at once if never settled here, at the third if it was", async () => {
    const nothing = new GasAtRisk(new PayerThrottle());
    nothing.settled(1, payer(9), ASSET);
    nothing.charge(1, waste(payer(1), 30_000n, "no-transfer"), 0);
    const refused = await nothing.refusal(1, payer(2), ASSET, MINUTE);
    expect(refused).toMatchObject({ code: "asset_throttled", retryAfterSeconds: 59 * 60 });
    expect(refused?.message).toContain("succeeded without moving the payment 1 time");

    const fresh = new GasAtRisk(new PayerThrottle());
    fresh.charge(1, waste(payer(1), 120_000n, "out-of-gas"), 0);
    expect(await fresh.refusal(1, payer(2), ASSET, 1)).toMatchObject({ code: "asset_throttled" });
    // Out of gas is not the payer's doing: the payer itself is not charged.
    expect(await fresh.refusal(1, payer(1), `0x${"d".repeat(40)}`, 1)).toBeUndefined();

    const known = new GasAtRisk(new PayerThrottle(), { trusted: () => true });
    known.charge(1, waste(payer(1), 120_000n, "out-of-gas"), 0);
    known.charge(1, waste(payer(2), 120_000n, "out-of-gas"), 1);
    expect(await known.refusal(1, payer(3), ASSET, 2)).toBeUndefined();
    known.charge(1, waste(payer(3), 120_000n, "out-of-gas"), 2);
    expect(await known.refusal(1, payer(4), ASSET, 3)).toMatchObject({ code: "asset_throttled" });
  });

  test("reverts refuse an asset never settled here once three different payers had them; a known asset never", async () => {
    const fresh = new GasAtRisk(new PayerThrottle({ limit: 10 }));
    for (let i = 0; i < 5; i++) fresh.charge(1, waste(payer(1), 30_000n, "reverted"), i);
    // One payer's reverts are its own doing.
    expect(await fresh.refusal(1, payer(5), ASSET, 10)).toBeUndefined();
    fresh.charge(1, waste(payer(2), 30_000n, "reverted"), 11);
    fresh.charge(1, waste(payer(3), 30_000n, "reverted"), 12);
    const refused = await fresh.refusal(1, payer(5), ASSET, 13);
    expect(refused).toMatchObject({ code: "asset_throttled" });
    expect(refused?.message).toContain("reverted 3 times (for different payers)");

    const known = new GasAtRisk(new PayerThrottle(), { budgetGas: 10n ** 12n });
    known.settled(1, payer(9), ASSET);
    for (let i = 0; i < 20; i++) known.charge(1, waste(payer(i + 1), 30_000n, "reverted"), i);
    expect(await known.refusal(1, payer(50), ASSET, 30)).toBeUndefined();
  });
});

describe("SettlementRate", () => {
  const SELLER = "0x00000000000000000000000000000000000000Cc";
  const parties = (payer: string, payee = SELLER) => ({ payers: [payer], payees: [payee] });

  test("N a minute per payer and per payee, given back when nothing was sent, refilled over time", () => {
    let now = 0;
    const rate = new SettlementRate(2, { now: () => now });
    const first = rate.take(parties(PAYER));
    expect(first.ok).toBe(true);
    // A settle that sent nothing gives its place back (once, however often it is released).
    if (first.ok) {
      first.release();
      first.release();
    }
    expect(rate.take(parties(PAYER)).ok).toBe(true);
    expect(rate.take(parties(PAYER.toLowerCase())).ok).toBe(true);
    const waits = rate.take(parties(PAYER));
    expect(waits).toMatchObject({
      ok: false,
      failure: { code: "payer_throttled", retryAfterSeconds: 30 },
    });
    now += 29_000;
    expect(rate.refusal(parties(PAYER))).toMatchObject({ retryAfterSeconds: 1 });
    now += 1_000;
    expect(rate.take(parties(PAYER)).ok).toBe(true);
    expect(rate.take(parties(PAYER)).ok).toBe(false);
  });

  test("a payee is paid at ten times a payer's rate: its buyers do not wait on each other", () => {
    const rate = new SettlementRate(2, { now: () => 0 });
    const buyer = (i: number) => `0x${(i + 1).toString(16).padStart(40, "0")}`;
    for (let i = 0; i < 20; i++) expect(rate.take(parties(buyer(i))).ok).toBe(true);
    // The 21st buyer has its own two, but the seller's twenty are spent: it waits, taking nothing.
    const waits = rate.refusal(parties(buyer(20)));
    expect(waits?.message).toContain(`payee ${SELLER.toLowerCase()}`);
    expect(waits?.retryAfterSeconds).toBe(3);
    expect(rate.take(parties(buyer(20), `0x${"e".repeat(40)}`)).ok).toBe(true);
    expect(rate.take(parties(buyer(20), `0x${"e".repeat(40)}`)).ok).toBe(true);
    expect(rate.take(parties(buyer(20), `0x${"e".repeat(40)}`)).ok).toBe(false);
  });

  test("memory is bounded: past the cap the least recently used address comes back full", () => {
    const rate = new SettlementRate(1, { now: () => 0, maxTracked: 2 });
    const payer = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;
    expect(rate.take({ payers: [payer(1)], payees: [] }).ok).toBe(true);
    expect(rate.take({ payers: [payer(1)], payees: [] }).ok).toBe(false);
    for (const i of [2, 3]) rate.take({ payers: [payer(i)], payees: [] });
    expect(rate.take({ payers: [payer(1)], payees: [] }).ok).toBe(true);
  });
});
