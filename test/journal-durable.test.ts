/**
 * A journal record is on disk when its promise resolves: the file is opened with O_DSYNC, so
 * each group's write is also its data sync (one trip to the thread pool, not a write and an
 * fdatasync). Read from the kernel's own view of the descriptor (/proc, Linux: what CI runs).
 */
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { notRecorded } from "../src/core/store.js";
import { FacilitatorError } from "../src/protocol/errors.js";
import { Journal } from "../src/store/journal.js";

/** O_DSYNC on Linux (octal 010000), as /proc/<pid>/fdinfo prints the flags. */
const O_DSYNC = 0o10000;
const O_APPEND = 0o2000;

function flagsOf(file: string): number | undefined {
  for (const fd of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target !== file) continue;
    const info = readFileSync(`/proc/self/fdinfo/${fd}`, "utf8");
    const flags = /^flags:\s+([0-7]+)/m.exec(info)?.[1];
    return flags === undefined ? undefined : Number.parseInt(flags, 8);
  }
  return undefined;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux")("journal durability", () => {
  test("the journal's descriptor appends with O_DSYNC, and a resolved record is in the file", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-durable-"));
    dirs.push(dir);
    const file = path.join(dir, "journal.jsonl");
    const journal = new Journal(file);
    try {
      const flags = flagsOf(file);
      expect(flags).toBeDefined();
      expect((flags ?? 0) & O_DSYNC).toBe(O_DSYNC);
      expect((flags ?? 0) & O_APPEND).toBe(O_APPEND);

      const hash = `0x${"ab".repeat(32)}` as const;
      await journal.recordSend(
        {
          key: "eip3009:31337:0xtoken:0xpayer:0x01",
          network: "eip155:31337",
          signer: "0x0000000000000000000000000000000000000001",
          txNonce: 0,
        },
        hash,
        "0x02f8",
      );
      const lines = readFileSync(file, "utf8").trim().split("\n");
      expect(lines.some((line) => line.includes(hash))).toBe(true);
    } finally {
      journal.close();
    }
  });
});

/**
 * A write that stops short, as a full disk's does (578 bytes of a group in, then ENOSPC): injected
 * here, since no disk can be filled on every machine (test/journal-disk-full.test.ts fills a real
 * tmpfs where it can mount one).
 */
describe("a write cut short", () => {
  const record = (i: number) =>
    [
      {
        key: `eip3009:31337:0xtoken:0xpayer:0x${i}`,
        network: "eip155:31337",
        signer: "0x0000000000000000000000000000000000000001",
        txNonce: i,
      },
      `0x${i.toString(16).padStart(64, "0")}`,
      `0x${"02".repeat(600)}`,
    ] as const;

  test("is refused as store_unavailable, cut back, and the next record stands alone", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-short-"));
    dirs.push(dir);
    const file = path.join(dir, "journal.jsonl");
    let full = false;
    const shortWrite = (fd: number, buffer: Buffer, offset: number, length: number) =>
      new Promise<number>((resolve, reject) => {
        if (!full) return resolve(writeSync(fd, buffer, offset, length));
        if (offset > 0)
          return reject(
            Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" }),
          );
        resolve(writeSync(fd, buffer, offset, Math.min(length, 578)));
      });
    const journal = new Journal(file, { write: shortWrite });
    await journal.recordSend(...record(1));
    const before = statSync(file).size;
    full = true;
    const refused = await journal.recordSend(...record(2)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FacilitatorError);
    expect((refused as FacilitatorError).failure).toMatchObject({
      code: "store_unavailable",
      retryAfterSeconds: expect.any(Number),
    });
    expect((refused as Error).message).toMatch(/ENOSPC.*wrote 578 of \d+ bytes.*nothing was sent/);
    expect(notRecorded(refused)).toBe(true);
    // Nothing of it stays: not on disk, not in memory.
    expect(statSync(file).size).toBe(before);
    expect(journal.get(record(2)[0].key)).toBeUndefined();
    full = false;
    await journal.recordSend(...record(3));
    journal.close();
    const warnings: string[] = [];
    const again = new Journal(file, { warn: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
    expect(await again.findByTransaction(record(1)[1])).toBeDefined();
    expect(await again.findByTransaction(record(2)[1])).toBeUndefined();
    expect(await again.findByTransaction(record(3)[1])).toBeDefined();
    again.close();
  });

  test("a torn line left by an earlier version is skipped with a warning; the record glued to it is read", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-torn-"));
    dirs.push(dir);
    const file = path.join(dir, "journal.jsonl");
    const line = (i: number) => {
      const [entry, hash, raw] = record(i);
      return JSON.stringify({ t: "send", ...entry, hash, raw });
    };
    // Record 2 torn after 578 bytes, record 3 appended to it on the same line, then record 4.
    writeFileSync(file, `${line(1)}\n${line(2).slice(0, 578)}${line(3)}\n${line(4)}\n`);
    const warnings: string[] = [];
    const journal = new Journal(file, { warn: (m) => warnings.push(m) });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/skipped 1 torn line\(s\) \(line 2\)/);
    for (const i of [1, 3, 4]) expect(await journal.findByTransaction(record(i)[1])).toBeDefined();
    expect(await journal.findByTransaction(record(2)[1])).toBeUndefined();
    journal.close();
  });
});
