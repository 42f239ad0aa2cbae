/**
 * The settle loop (core/settle-loop.ts) driven with steps of the test's own, over a real journal
 * in a temporary folder: the order of the steps, the answer while another holds the turn, a dry
 * run that sends nothing whatever the store holds, when the turn is given back, a pick-up that
 * answers, a success recorded by the loop before it is answered, and a send that throws. Every scheme's transaction goes through this loop, so what it
 * promises here holds for all of them.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Hex } from "viem";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { Answers } from "../src/core/answers.js";
import {
  type LoopPorts,
  type MaySend,
  type Outcome,
  type SettleSteps,
  Success,
  settleInTurn,
} from "../src/core/settle-loop.js";
import { type JournalEntry, markNotRecorded, type SettlementStore } from "../src/core/store.js";
import type { WaitUntil } from "../src/protocol/schemas.js";
import { Journal } from "../src/store/journal.js";

type Answer = { readonly ok: boolean; readonly said: string };

/** Steps that write down what the loop asked of them, answering as `plan` says. */
function stepsFor(
  key: string,
  plan: {
    pickUp?: Outcome<Answer> | undefined;
    prepare?: Answer | undefined;
    hold?: Answer | undefined;
    send?: () => Promise<Outcome<Answer>>;
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
    send: async (prepared: string, waitUntil: WaitUntil, may: MaySend) => {
      calls.push(`send ${prepared} ${waitUntil}`);
      licences.push(may);
      return plan.send ? plan.send() : { ok: true, said: "settled" };
    },
  };
  return { steps, calls, licences };
}

let dir: string;
let journal: Journal;
/** The loop over the journal, with its record of answers (core/answers.ts). */
let ports: LoopPorts;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "settle-loop-"));
  journal = new Journal(path.join(dir, "journal.jsonl"));
  ports = { journal, answers: new Answers(journal) };
});

afterEach(() => {
  journal.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes down a broadcast of `key`, as a send before a crash would have left it. */
async function holdsBroadcast(key: string): Promise<void> {
  const hash = `0x${"ab".repeat(32)}` as Hex;
  await journal.recordSend(
    { key, network: "eip155:31337", signer: `0x${"11".repeat(20)}`, txNonce: 0 },
    hash,
    "0x02" as Hex,
  );
}

/** The record of answers, telling `recorded` of each record once the store has made it. */
function watchedPorts(store: SettlementStore = journal) {
  const recorded: string[] = [];
  const answers = new Answers(store);
  const watched: LoopPorts = {
    journal,
    answers: {
      answer: async (key, mined) => {
        const made = await answers.answer(key, mined);
        recorded.push(`${key} ${mined ? "mined" : "submitted"} ${made ? "recorded" : "refused"}`);
        return made;
      },
    },
  };
  return { watched, recorded };
}

const settled = { ok: true, said: "settled" };
const pending = { ok: false, said: "sent; its success is not recorded: retry" };

describe("the settle loop", () => {
  test("fresh: checks, holds, then sends, in that order; no pick-up when the store holds nothing", async () => {
    const { steps, calls, licences } = stepsFor("fresh");
    const answer = await settleInTurn(ports, steps, "confirmed");
    expect(answer).toEqual({ ok: true, said: "settled" });
    expect(calls).toEqual(["prepare", "hold priced", "send priced confirmed"]);
    // The send, and only it, is handed the licence to broadcast (preludes and funding use it).
    expect(licences).toHaveLength(1);
    expect(licences[0]).toBeDefined();
  });

  test("a refusal at any step is the answer, and nothing after it runs", async () => {
    const refused = { ok: false, said: "refused" };
    const checks = stepsFor("checks", { prepare: refused });
    expect(await settleInTurn(ports, checks.steps, "confirmed")).toBe(refused);
    expect(checks.calls).toEqual(["prepare"]);
    const held = stepsFor("held", { hold: refused });
    expect(await settleInTurn(ports, held.steps, "submitted")).toBe(refused);
    expect(held.calls).toEqual(["prepare", "hold priced"]);
  });

  test("while another settle holds the key's turn: busy, and no step runs", async () => {
    expect(journal.claim("taken")).toBe(true);
    const { steps, calls } = stepsFor("taken");
    expect(await settleInTurn(ports, steps, "confirmed")).toEqual({ ok: false, said: "busy" });
    expect(calls).toEqual(["busy"]);
    journal.release("taken");
    const again = stepsFor("taken");
    expect((await settleInTurn(ports, again.steps, "confirmed")).said).toBe("settled");
  });

  test("the store holds it: the pick-up answers, with the licence to send, and nothing is sent anew", async () => {
    await holdsBroadcast("held");
    const followed = { ok: true, said: "followed to its block" };
    const { steps, calls, licences } = stepsFor("held", { pickUp: followed });
    expect(await settleInTurn(ports, steps, "confirmed")).toBe(followed);
    expect(calls).toEqual(["pickUp"]);
    expect(licences).toHaveLength(1);
    expect(licences[0]).toBeDefined();
  });

  test("a pick-up that finds nothing in the way lets the settle go on afresh", async () => {
    await holdsBroadcast("failed-before");
    const { steps, calls } = stepsFor("failed-before");
    expect((await settleInTurn(ports, steps, "submitted")).said).toBe("settled");
    expect(calls).toEqual(["pickUp", "prepare", "hold priced", "send priced submitted"]);
  });

  test("a dry run: its pick-up gets no licence to send, and it neither holds nor sends", async () => {
    await holdsBroadcast("dry");
    const dry = stepsFor("dry");
    expect(await settleInTurn(ports, dry.steps, "simulated")).toEqual({
      ok: true,
      said: "would settle",
    });
    expect(dry.calls).toEqual(["pickUp", "prepare", "simulate priced"]);
    expect(dry.licences).toEqual([undefined]);
    const fresh = stepsFor("dry-fresh");
    await settleInTurn(ports, fresh.steps, "simulated");
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
    const slowPorts = { journal: slow, answers: ports.answers };
    await settleInTurn(
      slowPorts,
      stepsFor("refused", { prepare: { ok: false, said: "no" } }).steps,
      "confirmed",
    );
    expect(released).toBe(1);
    expect(journal.claim("refused")).toBe(true);
    // A success is handed over at once; its turn comes back after, so a retry meanwhile waits.
    await settleInTurn(slowPorts, stepsFor("paid").steps, "confirmed");
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
    await expect(settleInTurn(ports, steps, "confirmed")).rejects.toThrow("the node went away");
    expect(journal.claim("throws")).toBe(true);
  });

  test("a success is recorded by the loop, under each key it answers, before it is answered", async () => {
    const { watched, recorded } = watchedPorts();
    const { steps } = stepsFor("paid-here", {
      send: async () => {
        // Written down before it leaves, as a family's send does; a batch's member rides along.
        await holdsBroadcast("paid-here");
        await holdsBroadcast("rides-along");
        return new Success(settled, ["paid-here", "rides-along"], pending);
      },
    });
    const answer = await settleInTurn(watched, steps, "confirmed");
    expect(answer).toBe(settled);
    // Both records were made by the time the answer came back, not after.
    expect(recorded).toEqual(["paid-here mined recorded", "rides-along mined recorded"]);
    for (const key of ["paid-here", "rides-along"]) {
      const entry = await journal.get(key);
      expect(entry?.state).toBe("answered");
      expect(entry?.owner).toBe(journal.runId);
    }
    // Only submitted: the store keeps following it until it lands.
    const early = stepsFor("submitted-only", {
      send: async () => {
        await holdsBroadcast("submitted-only");
        return new Success(settled, ["submitted-only"], pending, false);
      },
    });
    expect(await settleInTurn(ports, early.steps, "submitted")).toBe(settled);
    expect((await journal.get("submitted-only"))?.state).toBe("submitted");
  });

  test("a success the store cannot record is answered pending, never as a success, and its turn comes back at once", async () => {
    // The store unreachable for one key's record (as a PostgreSQL connection refused mid-settle).
    const refusing = new Proxy(journal, {
      get(target, name) {
        if (name === "markAnswered") {
          return (key: string, state?: "answered" | "submitted") =>
            key === "rides-along"
              ? Promise.reject(markNotRecorded(new Error("connection refused")))
              : target.markAnswered(key, state);
        }
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const { watched, recorded } = watchedPorts(refusing);
    const { steps } = stepsFor("half-recorded", {
      send: async () => {
        await holdsBroadcast("half-recorded");
        return new Success(settled, ["half-recorded", "rides-along"], pending);
      },
    });
    expect(await settleInTurn(watched, steps, "confirmed")).toBe(pending);
    expect(recorded).toContain("rides-along mined refused");
    // A refusal's turn is given back before it is answered: the retry may come at once.
    expect(journal.claim("half-recorded")).toBe(true);
  });

  test("a pick-up that follows what the store holds to its block: recorded, then answered, nothing sent anew", async () => {
    await holdsBroadcast("followed");
    const { watched, recorded } = watchedPorts();
    const { steps, calls } = stepsFor("followed", {
      pickUp: new Success(settled, ["followed"], pending),
    });
    expect(await settleInTurn(watched, steps, "confirmed")).toBe(settled);
    expect(calls).toEqual(["pickUp"]);
    expect(recorded).toEqual(["followed mined recorded"]);
    expect((await journal.get("followed"))?.state).toBe("answered");
  });

  test("a dry run of a settlement already answered: no licence, nothing held or sent, nothing recorded", async () => {
    await holdsBroadcast("answered-before");
    await journal.markAnswered("answered-before");
    const { watched, recorded } = watchedPorts();
    const dry = stepsFor("answered-before");
    expect((await settleInTurn(watched, dry.steps, "simulated")).said).toBe("would settle");
    expect(dry.calls).toEqual(["pickUp", "prepare", "simulate priced"]);
    expect(dry.licences).toEqual([undefined]);
    expect(recorded).toEqual([]);
  });
});

describe("where a success is recorded", () => {
  /** Every .ts file under `dir`. */
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return sources(full);
      return entry.name.endsWith(".ts") ? [full] : [];
    });
  const src = path.resolve(import.meta.dirname, "../src");

  test("by the loop alone: no scheme or family records an answer (answers.answer, markAnswered) itself", () => {
    const outside: string[] = [];
    for (const file of sources(src)) {
      const where = path.relative(src, file).split(path.sep).join("/");
      // The core records answers (core/answers.ts, through the loop); the stores implement it.
      if (where.startsWith("core/") || where.startsWith("store/")) continue;
      const text = readFileSync(file, "utf8");
      for (const call of text.matchAll(/\.(answer|markAnswered)\(/g)) {
        const line = text.slice(
          text.lastIndexOf("\n", call.index) + 1,
          text.indexOf("\n", call.index),
        );
        outside.push(`${where}: ${line.trim()}`);
      }
    }
    expect(outside).toEqual([]);
    // And the loop does record: the one call is in core/settle-loop.ts.
    const loop = readFileSync(path.join(src, "core/settle-loop.ts"), "utf8");
    expect(loop.match(/answers\.answer\(/g)).toHaveLength(1);
  });

  test("the licence to send comes from the core alone: no family or scheme makes its own MaySend", () => {
    // The loop hands it to pickUp outside a dry run and to send; the reconciler to follow().
    const minted = sources(src)
      .map((file) => path.relative(src, file).split(path.sep).join("/"))
      .filter((where) => !where.startsWith("core/"))
      .filter((where) => /\bMAY_SEND\b/.test(readFileSync(path.join(src, where), "utf8")));
    expect(minted).toEqual([]);
  });
});
