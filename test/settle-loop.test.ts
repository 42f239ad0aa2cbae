/**
 * The settle loop (core/settle-loop.ts) driven with steps of the test's own, over a real journal
 * in a temporary folder: the order of the steps, the answer while another holds the turn, a dry
 * run that sends nothing whatever the store holds, when the turn is given back, a pick-up that
 * answers, and a send that throws. Every scheme's transaction goes through this loop, so what it
 * promises here holds for all of them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Hex } from "viem";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { type MaySend, type SettleSteps, settleInTurn } from "../src/core/settle-loop.js";
import type { JournalEntry, SettlementStore } from "../src/core/store.js";
import type { WaitUntil } from "../src/protocol/schemas.js";
import { Journal } from "../src/store/journal.js";

type Answer = { readonly ok: boolean; readonly said: string };

/** Steps that write down what the loop asked of them, answering as `plan` says. */
function stepsFor(
  key: string,
  plan: {
    pickUp?: Answer | undefined;
    prepare?: Answer | undefined;
    hold?: Answer | undefined;
    send?: () => Promise<Answer>;
  } = {},
) {
  const calls: string[] = [];
  const licences: (MaySend | undefined)[] = [];
  const steps: SettleSteps<string, Answer> = {
    key,
    busy: () => {
      calls.push("busy");
      return { ok: false, said: "busy" };
    },
    pickUp: async (_entry: JournalEntry, _waitUntil: WaitUntil, may: MaySend | undefined) => {
      calls.push("pickUp");
      licences.push(may);
      return plan.pickUp;
    },
    prepare: async () => {
      calls.push("prepare");
      return plan.prepare ? { ok: false, result: plan.prepare } : { ok: true, value: "priced" };
    },
    simulate: async (prepared: string) => {
      calls.push(`simulate ${prepared}`);
      return { ok: true, said: "would settle" };
    },
    hold: async (prepared: string) => {
      calls.push(`hold ${prepared}`);
      return plan.hold;
    },
    send: async (prepared: string, waitUntil: WaitUntil) => {
      calls.push(`send ${prepared} ${waitUntil}`);
      return plan.send ? plan.send() : { ok: true, said: "settled" };
    },
  };
  return { steps, calls, licences };
}

let dir: string;
let journal: Journal;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "settle-loop-"));
  journal = new Journal(path.join(dir, "journal.jsonl"));
});

afterEach(() => {
  journal.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes down a broadcast of `key`, as a send before a crash would have left it. */
async function holdsBroadcast(key: string): Promise<void> {
  const hash = `0x${"ab".repeat(32)}` as Hex;
  await journal.recordSend(
    { key, chainId: 31337, signer: `0x${"11".repeat(20)}`, txNonce: 0 },
    hash,
    "0x02" as Hex,
  );
}

describe("the settle loop", () => {
  test("fresh: checks, holds, then sends, in that order; no pick-up when the store holds nothing", async () => {
    const { steps, calls } = stepsFor("fresh");
    const answer = await settleInTurn(journal, steps, "confirmed");
    expect(answer).toEqual({ ok: true, said: "settled" });
    expect(calls).toEqual(["prepare", "hold priced", "send priced confirmed"]);
  });

  test("a refusal at any step is the answer, and nothing after it runs", async () => {
    const refused = { ok: false, said: "refused" };
    const checks = stepsFor("checks", { prepare: refused });
    expect(await settleInTurn(journal, checks.steps, "confirmed")).toBe(refused);
    expect(checks.calls).toEqual(["prepare"]);
    const held = stepsFor("held", { hold: refused });
    expect(await settleInTurn(journal, held.steps, "submitted")).toBe(refused);
    expect(held.calls).toEqual(["prepare", "hold priced"]);
  });

  test("while another settle holds the key's turn: busy, and no step runs", async () => {
    expect(journal.claim("taken")).toBe(true);
    const { steps, calls } = stepsFor("taken");
    expect(await settleInTurn(journal, steps, "confirmed")).toEqual({ ok: false, said: "busy" });
    expect(calls).toEqual(["busy"]);
    journal.release("taken");
    const again = stepsFor("taken");
    expect((await settleInTurn(journal, again.steps, "confirmed")).said).toBe("settled");
  });

  test("the store holds it: the pick-up answers, with the licence to send, and nothing is sent anew", async () => {
    await holdsBroadcast("held");
    const followed = { ok: true, said: "followed to its block" };
    const { steps, calls, licences } = stepsFor("held", { pickUp: followed });
    expect(await settleInTurn(journal, steps, "confirmed")).toBe(followed);
    expect(calls).toEqual(["pickUp"]);
    expect(licences).toHaveLength(1);
    expect(licences[0]).toBeDefined();
  });

  test("a pick-up that finds nothing in the way lets the settle go on afresh", async () => {
    await holdsBroadcast("failed-before");
    const { steps, calls } = stepsFor("failed-before");
    expect((await settleInTurn(journal, steps, "submitted")).said).toBe("settled");
    expect(calls).toEqual(["pickUp", "prepare", "hold priced", "send priced submitted"]);
  });

  test("a dry run: its pick-up gets no licence to send, and it neither holds nor sends", async () => {
    await holdsBroadcast("dry");
    const dry = stepsFor("dry");
    expect(await settleInTurn(journal, dry.steps, "simulated")).toEqual({
      ok: true,
      said: "would settle",
    });
    expect(dry.calls).toEqual(["pickUp", "prepare", "simulate priced"]);
    expect(dry.licences).toEqual([undefined]);
    const fresh = stepsFor("dry-fresh");
    await settleInTurn(journal, fresh.steps, "simulated");
    expect(fresh.calls).toEqual(["prepare", "simulate priced"]);
  });

  test("the turn: given back before a refusal is answered, after a success is", async () => {
    // A store whose release takes a while, as PostgreSQL's does.
    let released = 0;
    const slow: Pick<SettlementStore, "claim" | "get" | "release"> = {
      claim: (key) => journal.claim(key),
      get: (key) => journal.get(key),
      release: async (key) => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        journal.release(key);
        released++;
      },
    };
    await settleInTurn(
      slow,
      stepsFor("refused", { prepare: { ok: false, said: "no" } }).steps,
      "confirmed",
    );
    expect(released).toBe(1);
    expect(journal.claim("refused")).toBe(true);
    // A success is handed over at once; its turn comes back after, so a retry meanwhile waits.
    await settleInTurn(slow, stepsFor("paid").steps, "confirmed");
    expect(released).toBe(1);
    expect(journal.claim("paid")).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(released).toBe(2);
    expect(journal.claim("paid")).toBe(true);
  });

  test("a send that throws: the error reaches the caller and the turn is given back", async () => {
    const { steps } = stepsFor("throws", {
      send: async () => {
        throw new Error("the node went away");
      },
    });
    await expect(settleInTurn(journal, steps, "confirmed")).rejects.toThrow("the node went away");
    expect(journal.claim("throws")).toBe(true);
  });
});
