/**
 * The Solana in-flight ledger's memory over time, without a chain: reservations that need no read
 * (nothing else in flight for the account) are decided in-process, so no RPC is asked. What landed
 * is kept a minute, then let go, also for accounts never seen again.
 */
import type { Client } from "viem";
import { afterEach, describe, expect, test, vi } from "vitest";
import { InFlightLedger } from "../src/core/ledger.js";
import { Journal } from "../src/store/journal.js";
import { SvmLedgerReads } from "../src/svm/chain/ledger-reads.js";

const network = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
/** Never asked: every reservation here is decided without a read. */
const noChain = {} as Client;

afterEach(() => {
  vi.useRealTimers();
});

describe("the in-flight ledger on Solana", () => {
  test("landed holds of accounts never seen again are let go after a minute", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const ledger = new InFlightLedger();
    const reads = new SvmLedgerReads(noChain, new Journal());
    for (let i = 0; i < 500; i++) {
      const spend = { network, mint: "mint", source: `account-${i}`, amount: 10n };
      const failure = await ledger.reserve(reads, `key-${i}`, [spend], 0, [`sig-${i}`]);
      expect(failure).toBeUndefined();
      ledger.landed(`key-${i}`, BigInt(i));
    }
    expect(ledger.size).toBe(500);
    expect(ledger.pending).toBe(0);
    vi.advanceTimersByTime(61_000);
    const spend = { network, mint: "mint", source: "another", amount: 10n };
    expect(await ledger.reserve(reads, "new", [spend], 500, ["sig"])).toBeUndefined();
    expect(ledger.size).toBe(1);
    expect(ledger.pending).toBe(1);
  });

  test("a hold that has not landed stays until it lands, fails or is 30 minutes old", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const ledger = new InFlightLedger();
    const reads = new SvmLedgerReads(noChain, new Journal());
    const first = { network, mint: "mint", source: "a", amount: 1n };
    await ledger.reserve(reads, "a", [first], 0, ["sig-a"]);
    vi.advanceTimersByTime(29 * 60_000);
    await ledger.reserve(reads, "b", [{ ...first, source: "b" }], 0, ["sig-b"]);
    expect(ledger.pending).toBe(2);
    vi.advanceTimersByTime(2 * 60_000);
    await ledger.reserve(reads, "c", [{ ...first, source: "c" }], 0, ["sig-c"]);
    expect(ledger.pending).toBe(2);
    ledger.release("b");
    expect(ledger.pending).toBe(1);
  });
});
