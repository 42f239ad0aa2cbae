/**
 * The core in-flight ledger's decisions, through a family whose reads are scripted here: when it
 * reads, when a recent read is enough, and how landings and reads on one line of points (blocks,
 * slots) weigh against each other. The families' own reads meet real chains in hostile.test.ts,
 * svm-settle.test.ts and the replica tests.
 */
import { describe, expect, test } from "vitest";
import { InFlightLedger } from "../src/core/ledger.js";
import { balanceShortfall, type LedgerReads, type PointRead } from "../src/core/ledger-reads.js";
import { Journal } from "../src/store/journal.js";

interface Spend {
  readonly account: string;
  readonly amount: bigint;
}

/** A family whose chain answers each read with the next of `answers`. */
function scripted(...answers: { point: bigint; balance: bigint; landed?: [string, bigint][] }[]) {
  const asked: string[][] = [];
  const reads: LedgerReads<Spend> = {
    store: new Journal(),
    slotOf: (spend) => spend.account,
    async read(spends, holds): Promise<PointRead> {
      asked.push(holds.map((h) => h.key));
      const answer = answers.shift();
      if (!answer) throw new Error("read once too often");
      return {
        point: answer.point,
        available: spends.map(() => answer.balance),
        landed: new Map(answer.landed ?? []),
      };
    },
    shortfall: (spend, have, held) => balanceShortfall("the payer", have, held, spend.amount),
  };
  return { reads, asked };
}

const spend = (amount: bigint) => ({ account: "payer", amount });

describe("the in-flight ledger", () => {
  test("a read of the last 5 s accepts without reading again; a landing after its point counts against it", async () => {
    const ledger = new InFlightLedger();
    const { reads, asked } = scripted(
      { point: 10n, balance: 1_000n },
      // a's 500 gone, and 100 received meanwhile.
      { point: 11n, balance: 600n },
    );
    // Nothing else in flight: the settle's own simulation proved it.
    expect(await ledger.reserve(reads, "a", [spend(500n)], ledger.mark())).toBeUndefined();
    expect(asked).toEqual([]);
    expect(await ledger.reserve(reads, "b", [spend(300n)], ledger.mark())).toBeUndefined();
    expect(asked).toEqual([["a"]]);
    expect(await ledger.reserve(reads, "c", [spend(100n)], ledger.mark())).toBeUndefined();
    expect(asked).toHaveLength(1);
    // a lands after the read's point: the read does not show it, so 150 more is not covered by it.
    ledger.landed("a", 11n);
    expect(await ledger.reserve(reads, "d", [spend(150n)], ledger.mark())).toBeUndefined();
    expect(asked).toEqual([["a"], ["b", "c"]]);
    expect(ledger.pending).toBe(3);
  });

  test("a landing seen before a read, in a later point than a lagging node read at, still counts", async () => {
    const ledger = new InFlightLedger();
    const { reads } = scripted({ point: 15n, balance: 1_000n });
    const mark = ledger.mark();
    expect(await ledger.reserve(reads, "a", [spend(600n)], mark)).toBeUndefined();
    ledger.landed("a", 20n);
    // This settle's simulation started before a landed: the ledger reads, at an older point.
    expect(await ledger.reserve(reads, "b", [spend(600n)], mark)).toEqual(
      balanceShortfall("the payer", 1_000n, 600n, 600n),
    );
  });

  test("a hold the read finds landed by its point is let go, and the store hears where", async () => {
    const freed: [string, bigint | undefined][] = [];
    const ledger = new InFlightLedger({ onFree: (key, landedIn) => freed.push([key, landedIn]) });
    const { reads } = scripted({ point: 30n, balance: 500n, landed: [["a", 29n]] });
    expect(await ledger.reserve(reads, "a", [spend(500n)], ledger.mark())).toBeUndefined();
    expect(await ledger.reserve(reads, "b", [spend(600n)], ledger.mark())).toMatchObject({
      code: "insufficient_funds",
      message: "the payer holds 500 and this payment needs 600",
    });
    expect(freed).toEqual([["a", 29n]]);
    expect(ledger.pending).toBe(0);
    expect(ledger.size).toBe(1);
  });

  test("after a revert the next settle reads afresh", async () => {
    const ledger = new InFlightLedger();
    const { reads, asked } = scripted(
      { point: 1n, balance: 1_000n },
      { point: 3n, balance: 1_000n },
    );
    await ledger.reserve(reads, "a", [spend(100n)], ledger.mark());
    await ledger.reserve(reads, "b", [spend(100n)], ledger.mark());
    expect(asked).toHaveLength(1);
    ledger.landed("a", 2n, false);
    expect(await ledger.reserve(reads, "c", [spend(100n)], ledger.mark())).toBeUndefined();
    expect(asked).toEqual([["a"], ["b"]]);
  });
});
