/**
 * When a lock file's holder counts as running: a live process that started when the lock says
 * (held), a pid now used by another process (taken over), a holder on another host (held: it
 * cannot be checked from here), a file nobody finished writing (taken over once old). The
 * end-to-end cases (parallel settles, a second serve, a SIGKILLed serve) are in one-key.test.ts.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tryLock } from "../src/cli/locks/process-lock.js";
import { lockForServe } from "../src/cli/locks/settlement-locks.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-process-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const linux = existsSync("/proc/self/stat");

function startTimeOf(pid: number): string | undefined {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

/** A process that runs until killed, for a holder that is alive. */
function sleeper() {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  return child;
}

function lockOf(pid: number, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    pid,
    host: os.hostname(),
    command: "facilitator serve",
    since: "2026-01-01T00:00:00.000Z",
    token: "t",
    ...extra,
  });
}

describe("a lock file's holder", () => {
  it.runIf(linux)("a live process that started when the lock says holds it", async () => {
    const child = sleeper();
    try {
      const pid = child.pid as number;
      await new Promise((r) => setTimeout(r, 100));
      const file = path.join(dir, "live.lock");
      writeFileSync(file, lockOf(pid, { started: startTimeOf(pid) }));
      const attempt = tryLock(file, "facilitator settle");
      expect(attempt.ok).toBe(false);
      if (!attempt.ok) expect(attempt.holder?.pid).toBe(pid);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it.runIf(linux)(
    "a pid now used by another process (another start time) is taken over",
    async () => {
      const child = sleeper();
      try {
        const pid = child.pid as number;
        await new Promise((r) => setTimeout(r, 100));
        const file = path.join(dir, "reused.lock");
        writeFileSync(file, lockOf(pid, { started: "1" }));
        const attempt = tryLock(file, "facilitator settle");
        expect(attempt.ok).toBe(true);
        expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
        if (attempt.ok) attempt.lock.release();
        expect(existsSync(file)).toBe(false);
      } finally {
        child.kill("SIGKILL");
      }
    },
  );

  it("a process that is gone is taken over", async () => {
    const child = sleeper();
    const pid = child.pid as number;
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const file = path.join(dir, "gone.lock");
    writeFileSync(file, lockOf(pid));
    const attempt = tryLock(file, "facilitator settle");
    expect(attempt.ok).toBe(true);
    if (attempt.ok) attempt.lock.release();
  });

  it("a holder on another host is held, and the message says how to clear it", () => {
    const journal = path.join(dir, "elsewhere.jsonl");
    writeFileSync(`${journal}.lock`, lockOf(1, { host: "another-host.example" }));
    expect(() => lockForServe(journal, [], { FACILITATOR_LOCK_DIR: dir })).toThrow(
      `facilitator serve (pid 1 on host another-host.example, since 2026-01-01T00:00:00.000Z): two processes`,
    );
    expect(() => lockForServe(journal, [], { FACILITATOR_LOCK_DIR: dir })).toThrow(
      `if it no longer runs, delete ${journal}.lock`,
    );
  });

  it("a lock directory that cannot be made is a usage error naming it and the fix", () => {
    const file = path.join(dir, "a-file");
    writeFileSync(file, "");
    expect(() =>
      lockForServe(path.join(dir, "ok.jsonl"), ["0x70997970C51812dc3A010C7d01b50e0d17dc79C8"], {
        FACILITATOR_LOCK_DIR: path.join(file, "locks"),
      }),
    ).toThrow(
      `cannot create the lock file ${path.join(file, "locks")}/key-0x70997970c51812dc3a010c7d01b50e0d17dc79c8.lock for the settlement key 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 (ENOTDIR): set FACILITATOR_LOCK_DIR to a writable directory`,
    );
    // The journal's lock, taken first, was given back.
    expect(existsSync(path.join(dir, "ok.jsonl.lock"))).toBe(false);
  });

  it("a file nobody finished writing is held for a moment, then taken over", () => {
    const file = path.join(dir, "torn.lock");
    writeFileSync(file, '{"pid":');
    expect(tryLock(file, "facilitator settle").ok).toBe(false);
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    const attempt = tryLock(file, "facilitator settle");
    expect(attempt.ok).toBe(true);
    if (attempt.ok) attempt.lock.release();
  });

  it("this process takes its own lock again, and gives it back when the last holder does", () => {
    const file = path.join(dir, "again.lock");
    const first = tryLock(file, "facilitator serve");
    const second = tryLock(file, "facilitator serve");
    expect(first.ok && second.ok).toBe(true);
    if (!first.ok || !second.ok) return;
    second.lock.release();
    expect(existsSync(file)).toBe(true);
    first.lock.release();
    expect(existsSync(file)).toBe(false);
  });
});
