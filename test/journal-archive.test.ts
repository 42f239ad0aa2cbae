/**
 * Months of history in the journal file: settled history past what memory keeps (the newest
 * 20,000 settlements) goes to archive segments while the journal is written, and `status` finds
 * it there by transaction, by payment and by payment-identifier; start-up reads the live file
 * only, whatever the history; a crash at any step of a compaction (a copy of the directory taken
 * at each step, and a real process killed while it compacts without pause) loses no settlement
 * and never holds one twice.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { settlementStatus } from "../src/core/status.js";
import { Journal } from "../src/store/journal.js";
import type { CompactionStep } from "../src/store/journal-file.js";
import { answerOf, entryOf, hashOf, holdings, idOf, SMALL } from "./helpers/journal-records.js";

const root = mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-archive-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const newFile = () => {
  const dir = path.join(root, `${++dirs}`);
  return path.join(dir, "journal.jsonl");
};

/** Settlements `from` to `to` (exclusive), 500 at a time, each sent then answered. */
async function settle(journal: Journal, from: number, to: number, withIds = true): Promise<void> {
  for (let start = from; start < to; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, to - start) }, async (_, k) => {
        const i = start + k;
        await journal.recordSend(entryOf(i), hashOf(i), "0x02f8");
        await journal.markAnswered(`k${i}`);
        if (withIds && i % 10 === 0) {
          journal.claimIdempotency(idOf(i), "fingerprint");
          await journal.finishIdempotency(idOf(i), answerOf(i));
        }
      }),
    );
  }
}

/** What `status` (core/status.ts, as the CLI and GET /settlements ask) says of settlement `i`. */
async function statusOf(journal: Journal, i: number) {
  const byHash = await settlementStatus([], journal, { transaction: hashOf(i) });
  const byId = await settlementStatus([], journal, { paymentIdentifier: idOf(i) });
  const byKey = await journal.findArchived(`k${i}`);
  return { byHash: byHash.state, byId: byId.state, byKey: byKey?.state, detail: byHash.detail };
}

describe("history past the newest 20,000 settlements", () => {
  test("is found by transaction, by payment and by payment-identifier, while written and after a restart", async () => {
    const file = newFile();
    const journal = new Journal(file);
    await settle(journal, 0, 26_000);
    await journal.compact();
    // The oldest 6,000 left memory: found in the archive.
    for (const i of [0, 10, 3_000, 25_990]) {
      expect(await statusOf(journal, i)).toMatchObject({
        byHash: "answered",
        byId: "answered",
        byKey: "answered",
      });
    }
    expect(journal.get("k0")).toBeUndefined(); // not in memory: the settle path reads no disk
    journal.close();
    const live = readFileSync(file, "utf8").trim().split("\n").length;
    expect(live).toBeLessThan(26_000); // the history is no longer in the live file

    // After a restart, and for a reader that never compacts (the CLI's status).
    for (const reopened of [
      new Journal(file),
      new Journal(file, { compactAfterLines: Infinity }),
    ]) {
      try {
        expect(await statusOf(reopened, 0)).toMatchObject({
          byHash: "answered",
          byId: "answered",
          byKey: "answered",
        });
      } finally {
        reopened.close();
      }
    }
  }, 120_000);

  test("older than what the store keeps: status says so and names the oldest kept date", async () => {
    const file = newFile();
    const journal = new Journal(file, { ...SMALL, retainDays: 1 });
    // Settled entries leave memory as new ones are sent: the first 400 make way for the next.
    await settle(journal, 0, 400, false);
    await settle(journal, 400, 800, false);
    await journal.compact();
    journal.close();
    // Age the oldest segment's settlements past the retention: rewritten as if made 3 days ago.
    const first = `${file}.archive/000001.jsonl`;
    const old = Date.now() - 3 * 86_400_000;
    const lines = readFileSync(first, "utf8").trim().split("\n");
    const aged = lines.map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (record.t === "segment") return JSON.stringify({ ...record, from: old, to: old });
      return JSON.stringify({ ...record, updatedAt: old });
    });
    writeFileSync(first, `${aged.join("\n")}\n`);
    const oldest = JSON.parse(lines[1] as string).key as string;

    const reopened = new Journal(file, { ...SMALL, retainDays: 1 });
    try {
      await settle(reopened, 800, 1_200, false);
      await reopened.compact();
      expect(existsSync(first)).toBe(false); // past the retention: deleted
      const asked = await settlementStatus([], reopened, {
        transaction: hashOf(Number(oldest.slice(1))),
      });
      expect(asked.found).toBe(false);
      const since = new Date((await reopened.keptSince()) ?? 0).toISOString();
      expect(asked.detail).toBe(
        `the journal ${file} holds no settlement for it (never settled here, or older than what this store keeps: its oldest settlement kept is from ${since})`,
      );
      expect(Date.parse(since)).toBeGreaterThan(old);
    } finally {
      reopened.close();
    }
  }, 60_000);
});

describe("start-up reads the live file only", () => {
  /** Bytes this process read (rchar, Linux) while opening the journal. */
  function bytesReadOpening(file: string): number {
    const rchar = () => Number(/rchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))?.[1]);
    const before = rchar();
    new Journal(file, SMALL).close();
    return rchar() - before;
  }

  test.runIf(process.platform === "linux")(
    "bytes read at start-up stay the same from 1,000 to 10,000 settlements behind it",
    async () => {
      const file = newFile();
      const journal = new Journal(file, SMALL);
      await settle(journal, 0, 1_000, false);
      // Settles outrun compactions here by far (thousands a second): the file holds what came
      // in during the last one; a compaction with nothing coming in shows what is live.
      await journal.compact();
      journal.close();
      const small = bytesReadOpening(file);
      const reopened = new Journal(file, SMALL);
      await settle(reopened, 1_000, 10_000, false);
      await reopened.compact();
      reopened.close();
      const large = bytesReadOpening(file);
      const written = statSync(file).size + archivedBytes(file);
      // Whatever the history, start-up reads the live file: what is live, no history.
      expect(large).toBeLessThan(1.2 * small);
      expect(large).toBeLessThan(written / 10);
    },
    120_000,
  );
});

function archivedBytes(file: string): number {
  const dir = `${file}.archive`;
  return readdirSync(dir).reduce((sum, name) => sum + statSync(path.join(dir, name)).size, 0);
}

describe("a crash at any step of a compaction", () => {
  test("a copy of the directory taken at each step opens with every settlement, once", async () => {
    const file = newFile();
    const images = new Map<CompactionStep, string>();
    const journal = new Journal(file, {
      ...SMALL,
      compactAfterLines: 1e9, // compacted only when asked below
      onCompactionStep: (step) => {
        const image = path.join(root, `image-${dirs}-${step}`);
        cpSync(path.dirname(file), image, { recursive: true });
        images.set(step, path.join(image, "journal.jsonl"));
      },
    });
    await settle(journal, 0, 600);
    // Settles go on while it compacts: some land between the cut and the swap.
    await Promise.all([journal.compact(), settle(journal, 600, 700)]);
    journal.close();
    expect([...images.keys()]).toEqual(["cut", "segment", "written", "tail", "renamed", "synced"]);
    for (const [step, image] of images) {
      const reopened = new Journal(image, SMALL);
      try {
        const held = holdings(image);
        const settled = await Promise.all(
          Array.from({ length: 700 }, async (_, i) => ({
            i,
            state: (await reopened.findArchived(`k${i}`))?.state,
            held: held.get(`k${i}`),
          })),
        );
        // Each taken after the settlements it holds were on disk: before the swap, the old
        // file holds every one of them; all 700 once the step's copy follows the last write.
        const lost = settled.filter((s) => s.i < 600 && s.state !== "answered");
        expect(lost, `${step}: lost`).toEqual([]);
        expect(
          settled.filter((s) => s.held !== undefined && s.held !== 1),
          `${step}: twice`,
        ).toEqual([]);
        // And it goes on from there: written, compacted again, still each once.
        await settle(reopened, 700, 900);
        await reopened.compact();
        expect(
          [...holdings(image).values()].every((n) => n === 1),
          step,
        ).toBe(true);
        expect((await reopened.findArchived("k0"))?.state).toBe("answered");
        expect(await reopened.idempotencyAnswer(idOf(0))).toEqual(answerOf(0));
      } finally {
        reopened.close();
      }
    }
  }, 120_000);

  test("a process killed while it compacts without pause loses no settlement it reported", async () => {
    const file = newFile();
    let next = 0;
    let midCompaction = 0;
    for (let run = 0; run < 6; run++) {
      const reported: number[] = [];
      const child: ChildProcess = spawn(
        process.execPath,
        ["--import", "tsx", "test/helpers/journal-writer.ts", file, String(next)],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      child.stdout?.setEncoding("utf8");
      let buffered = "";
      child.stdout?.on("data", (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const line of lines) reported.push(Number(line.slice(3)));
      });
      // Killed once it has settled a few hundred: at a random point of its compactions.
      await waitFor(() => reported.length >= 200 + run * 50, 60_000);
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
      if (existsSync(`${file}.compact`) || unnamedSegment(file)) midCompaction++;

      const reopened = new Journal(file, SMALL);
      try {
        const held = holdings(file);
        for (const i of reported) {
          expect((await reopened.findArchived(`k${i}`))?.state, `k${i}`).toBe("answered");
          expect(held.get(`k${i}`), `k${i} held`).toBe(1);
          if (i % 10 === 0) expect(await reopened.idempotencyAnswer(idOf(i))).toBeDefined();
        }
      } finally {
        reopened.close();
      }
      next = Math.max(next, ...reported) + 1;
    }
    // Killed mid-compaction at least once (it compacts all the time it writes).
    expect(midCompaction).toBeGreaterThan(0);
  }, 180_000);
});

/** A segment written that the live file does not name yet (a compaction cut short). */
function unnamedSegment(file: string): boolean {
  const through = Number(
    /"t":"archive","through":(\d+)/.exec(readFileSync(file, "utf8"))?.[1] ?? 0,
  );
  return existsSync(`${file}.archive/${String(through + 1).padStart(6, "0")}.jsonl`);
}

async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > until) throw new Error(`not done within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
