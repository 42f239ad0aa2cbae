/**
 * The Solana in-flight ledger's memory over time, without a chain: reservations that need no read
 * (nothing else in flight for the account) are decided in-process, so no RPC is asked. What landed
 * is kept a minute, then let go, also for accounts never seen again.
 */
import type { Client } from "viem";
import { afterEach, describe, expect, test, vi } from "vitest";
import { Journal } from "../src/store/journal.js";
import { SvmInFlight } from "../src/svm/chain/inflight.js";

const network = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
/** Never asked: every reservation here is decided without a read. */
const noChain = {} as Client;

afterEach(() => {
  vi.useRealTimers();
});

describe("SvmInFlight", () => {
  test("landed holds of accounts never seen again are let go after a minute", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const ledger = new SvmInFlight();
    const journal = new Journal();
    for (let i = 0; i < 500; i++) {
      const spend = { network, mint: "mint", source: `account-${i}`, amount: 10n };
      const failure = await ledger.reserve(noChain, journal, `key-${i}`, spend, `sig-${i}`, 0);
      expect(failure).toBeUndefined();
      ledger.landed(`key-${i}`, BigInt(i));
    }
    expect(ledger.size).toBe(500);
    expect(ledger.pending).toBe(0);
    vi.advanceTimersByTime(61_000);
    const spend = { network, mint: "mint", source: "another", amount: 10n };
    expect(await ledger.reserve(noChain, journal, "new", spend, "sig", 500)).toBeUndefined();
    expect(ledger.size).toBe(1);
    expect(ledger.pending).toBe(1);
  });

  test("a hold that has not landed stays until it lands, fails or is 30 minutes old", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const ledger = new SvmInFlight();
    const journal = new Journal();
    const first = { network, mint: "mint", source: "a", amount: 1n };
    await ledger.reserve(noChain, journal, "a", first, "sig-a", 0);
    vi.advanceTimersByTime(29 * 60_000);
    await ledger.reserve(noChain, journal, "b", { ...first, source: "b" }, "sig-b", 0);
    expect(ledger.pending).toBe(2);
    vi.advanceTimersByTime(2 * 60_000);
    await ledger.reserve(noChain, journal, "c", { ...first, source: "c" }, "sig-c", 0);
    expect(ledger.pending).toBe(2);
    ledger.release("b");
    expect(ledger.pending).toBe(1);
  });
});
