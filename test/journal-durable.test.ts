/**
 * A journal record is on disk when its promise resolves: the file is opened with O_DSYNC, so
 * each group's write is also its data sync (one trip to the thread pool, not a write and an
 * fdatasync). Read from the kernel's own view of the descriptor (/proc, Linux: what CI runs).
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
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
          chainId: 31337,
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
