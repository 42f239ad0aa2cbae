/**
 * Lock files where other users may write (FACILITATOR_LOCK_DIR on a shared directory): nothing
 * planted there is written through or blocks a serve for good. A symbolic link at a lock's name or
 * at its temporary file's is never followed; a directory others can write without the sticky bit
 * is refused; a lock naming a process it does not belong to (pid 1, another user's file) is stale;
 * a lock from another host counts while its holder renews it. Real files, links, FIFOs, processes
 * and users (the tests that change owners run as root).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { tryLock } from "../src/cli/locks/process-lock.js";
import { lockForServe } from "../src/cli/locks/settlement-locks.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-lock-attacks-"));
// Reachable by the other user some tests run a child as.
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const linux = existsSync("/proc/self/stat");
const root = process.geteuid?.() === 0;
/** A user that is not us: `nobody`. */
const OTHER_UID = 65534;
const KEY = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const keyLockIn = (locks: string) => path.join(locks, `key-${KEY.toLowerCase()}.lock`);

function startTimeOf(pid: number): string | undefined {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}
const bootId = linux ? readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() : undefined;

function lockOf(pid: number, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    pid,
    host: os.hostname(),
    command: "facilitator serve",
    since: "2026-01-01T00:00:00.000Z",
    token: "planted",
    ...extra,
  });
}

/** A fresh directory for one test's locks, with `mode`. */
let dirs = 0;
function lockDir(mode = 0o700): string {
  const made = path.join(dir, `locks-${dirs++}`);
  mkdirSync(made);
  chmodSync(made, mode);
  return made;
}

/** Serve's locks on KEY with the journal in a private directory; the error message, if refused. */
function serveLocks(locks: string, env: Record<string, string> = {}): string {
  const journal = path.join(lockDir(), "journal.jsonl");
  try {
    lockForServe(journal, [KEY], { FACILITATOR_LOCK_DIR: locks, ...env }).release();
    return "taken";
  } catch (error) {
    return (error as Error).message;
  }
}

/** serveLocks in a child process (as `uid`, if given): what it printed, and its stderr. */
function serveLocksInChild(locks: string, journalDir: string, uid?: number) {
  const journal = JSON.stringify(path.join(journalDir, "journal.jsonl"));
  const code = `import("./src/cli/locks/settlement-locks.ts").then((m) => {
    try {
      m.lockForServe(${journal}, [${JSON.stringify(KEY)}], { FACILITATOR_LOCK_DIR: ${JSON.stringify(locks)} }).release();
      console.log("taken");
    } catch (error) {
      console.log(error.message);
    }
  })`;
  return spawnSync(process.execPath, ["--import", "tsx", "-e", code], {
    cwd: ROOT,
    timeout: 20_000,
    encoding: "utf8",
    ...(uid === undefined ? {} : { uid, gid: uid }),
  });
}

describe("links planted where a lock writes", () => {
  it("a link at the lock's temporary name is not written through (its target is unchanged)", () => {
    const locks = lockDir();
    const victim = path.join(dir, "victim-temp");
    writeFileSync(victim, "root's file\n");
    const file = keyLockIn(locks);
    const attempt = tryLock(file, "facilitator serve");
    if (!attempt.ok) throw new Error("not taken");
    try {
      // The name the lock's temporary file had (pid-named), and a few others a guesser might use.
      for (const name of [`${file}.${process.pid}.tmp`, `${file}.tmp`, `${file}.new`]) {
        symlinkSync(victim, name);
      }
      attempt.lock.update({ url: "http://127.0.0.1:4021" });
      expect(readFileSync(victim, "utf8")).toBe("root's file\n");
      expect(JSON.parse(readFileSync(file, "utf8")).url).toBe("http://127.0.0.1:4021");
      expect(lstatSync(file).isSymbolicLink()).toBe(false);
    } finally {
      attempt.lock.release();
    }
  });

  it("a link at the lock's own name is removed (not its target) and the lock taken", () => {
    const locks = lockDir();
    const victim = path.join(dir, "victim-lock");
    writeFileSync(victim, "root's file\n");
    symlinkSync(victim, keyLockIn(locks));
    expect(serveLocks(locks)).toBe("taken");
    expect(readFileSync(victim, "utf8")).toBe("root's file\n");
    expect(existsSync(keyLockIn(locks))).toBe(false);
  });

  it("a FIFO at the lock's name does not hang serve: it is removed and the lock taken", () => {
    const locks = lockDir();
    expect(spawnSync("mkfifo", [keyLockIn(locks)]).status).toBe(0);
    // In a child: a read that blocks on the FIFO would block this test's thread for good.
    const child = serveLocksInChild(locks, lockDir());
    expect(child.stdout.trim(), child.stderr).toBe("taken");
  }, 30_000);
});

describe("a lock directory other users can write", () => {
  it("writable by every user without the sticky bit: refused, saying what to do", () => {
    const locks = lockDir(0o777);
    const message = serveLocks(locks);
    expect(message).toContain(
      `the lock directory ${locks} can be written by every user (mode 0777) and has no sticky bit`,
    );
    expect(message).toContain("a directory only this user can write");
    expect(message).toContain(`chmod 0700 ${locks}`);
    expect(existsSync(keyLockIn(locks))).toBe(false);
  });

  it.runIf(root)("writable by a group of other users without the sticky bit: refused", () => {
    const locks = lockDir(0o770);
    chownSync(locks, 0, OTHER_UID);
    expect(serveLocks(locks)).toContain(
      `can be written by its group (mode 0770) and has no sticky bit`,
    );
  });

  it.runIf(root)("writable by this user's own group only (umask 002): used", () => {
    // root's group has no other member here, as a user private group has none.
    expect(readFileSync("/etc/group", "utf8")).toMatch(/^root:[^:]*:0:$/m);
    const locks = lockDir(0o775);
    chownSync(locks, 0, 0);
    expect(serveLocks(locks)).toBe("taken");
  });

  it.runIf(root)("owned by another user: refused (its owner could plant links)", () => {
    const locks = lockDir(0o755);
    chownSync(locks, OTHER_UID, OTHER_UID);
    expect(serveLocks(locks)).toContain(
      `the lock directory ${locks} is owned by uid ${OTHER_UID}, not by this user`,
    );
  });

  it.runIf(root)(
    "with the sticky bit, another user's link that this user cannot remove: refused, saying whose it is and what to do",
    () => {
      const locks = lockDir(0o1777);
      symlinkSync("/etc/passwd", keyLockIn(locks));
      const journalDir = lockDir();
      chownSync(journalDir, OTHER_UID, OTHER_UID);
      const child = serveLocksInChild(locks, journalDir, OTHER_UID);
      expect(child.stdout.trim(), child.stderr).toBe(
        `the settlement key ${KEY} cannot be locked: its lock file ${keyLockIn(locks)} is a symbolic link, not a lock, but it belongs to uid 0 and this user cannot remove it (EPERM): remove it as uid 0 or root, or use a lock directory only this user can write`,
      );
      expect(readFileSync("/etc/passwd", "utf8")).toContain("root:");
    },
    30_000,
  );

  it.runIf(root && linux)(
    "with the sticky bit, another user's breaker file kept there: refused, saying whose it is",
    () => {
      const locks = lockDir(0o1777);
      const file = keyLockIn(locks);
      // A stale lock this user could remove, behind an old `.break` file of root's.
      writeFileSync(file, lockOf(1));
      chownSync(file, OTHER_UID, OTHER_UID);
      const old = new Date(Date.now() - 60_000);
      writeFileSync(`${file}.break`, "");
      utimesSync(`${file}.break`, old, old);
      const journalDir = lockDir();
      chownSync(journalDir, OTHER_UID, OTHER_UID);
      const child = serveLocksInChild(locks, journalDir, OTHER_UID);
      expect(child.stdout.trim(), child.stderr).toBe(
        `the settlement key ${KEY} cannot be locked: its lock file ${file} is stale, but ${file}.break, left by uid 0, keeps it from being removed and this user cannot remove that (EPERM): remove it as uid 0 or root, or use a lock directory only this user can write`,
      );
    },
    30_000,
  );

  it("with the sticky bit (like /tmp): used", () => {
    const locks = lockDir(0o1777);
    const file = keyLockIn(locks);
    const attempt = tryLock(file, "facilitator serve");
    expect(attempt.ok).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    if (attempt.ok) attempt.lock.release();
    expect(existsSync(file)).toBe(false);
  });
});

describe.runIf(linux)("a lock naming a process it does not belong to", () => {
  it("pid 1 with a start time that is not pid 1's: taken over", () => {
    const locks = lockDir();
    writeFileSync(keyLockIn(locks), lockOf(1, { started: "999999999", boot: bootId }));
    expect(serveLocks(locks)).toBe("taken");
  });

  it("pid 1 with no start time (no facilitator on Linux writes that): taken over", () => {
    const locks = lockDir();
    writeFileSync(keyLockIn(locks), lockOf(1));
    expect(serveLocks(locks)).toBe("taken");
  });

  it.runIf(root)(
    "in a sticky directory, another user's file naming pid 1 with its true start time: taken over",
    () => {
      const locks = lockDir(0o1777);
      const file = keyLockIn(locks);
      writeFileSync(file, lockOf(1, { started: startTimeOf(1), boot: bootId }));
      chownSync(file, OTHER_UID, OTHER_UID);
      expect(serveLocks(locks)).toBe("taken");
    },
  );

  it.runIf(root)(
    "in a sticky directory, another user's file naming this very process is not trusted as ours",
    () => {
      const locks = lockDir(0o1777);
      const file = keyLockIn(locks);
      writeFileSync(file, lockOf(process.pid, { started: startTimeOf(process.pid), boot: bootId }));
      chownSync(file, OTHER_UID, OTHER_UID);
      const attempt = tryLock(file, "facilitator serve");
      try {
        expect(attempt.ok).toBe(true);
        // Our own lock file now, not theirs (which they could remove to let a second serve in).
        expect(statSync(file).uid).toBe(process.geteuid?.());
        expect(JSON.parse(readFileSync(file, "utf8")).token).not.toBe("planted");
      } finally {
        if (attempt.ok) attempt.lock.release();
      }
    },
  );

  it.runIf(root)(
    "in a sticky directory, another user's lock naming a live process of theirs: held",
    async () => {
      const locks = lockDir(0o1777);
      const holder = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
        stdio: "ignore",
        cwd: "/",
        uid: OTHER_UID,
        gid: OTHER_UID,
      });
      try {
        const pid = holder.pid as number;
        await new Promise((r) => setTimeout(r, 200));
        const file = keyLockIn(locks);
        writeFileSync(file, lockOf(pid, { started: startTimeOf(pid), boot: bootId }));
        chownSync(file, OTHER_UID, OTHER_UID);
        const message = serveLocks(locks);
        expect(message).toContain(`facilitator serve (pid ${pid}, since`);
        expect(message).toContain(`its lock ${file} goes when pid ${pid} exits`);
      } finally {
        holder.kill("SIGKILL");
      }
    },
  );
});

describe("a lock from another host (a volume shared, or a container moved)", () => {
  const other = (renewed: Date) =>
    lockOf(4242, { host: "old-pod.example", renewed: renewed.toISOString() });

  it("not renewed within its lease: taken over", () => {
    const locks = lockDir();
    const file = keyLockIn(locks);
    const old = new Date(Date.now() - 5 * 60_000);
    writeFileSync(file, other(old));
    utimesSync(file, old, old);
    expect(serveLocks(locks)).toBe("taken");
  });

  it("renewed within its lease: held, the message says who, since when renewed, and how to clear it", () => {
    const locks = lockDir();
    const file = keyLockIn(locks);
    writeFileSync(file, other(new Date()));
    const message = serveLocks(locks);
    expect(message).toContain(
      `is in use by facilitator serve (pid 4242 on host old-pod.example, since 2026-01-01T00:00:00.000Z)`,
    );
    expect(message).toMatch(/renewed \d+ s ago; it is taken over once not renewed for 60 s/);
    expect(message).toContain(`if it no longer runs, delete ${file}`);
  });

  it.runIf(root)(
    "in a sticky directory, another user's lock naming another host, renewed a moment ago: not trusted, taken over",
    () => {
      const locks = lockDir(0o1777);
      const file = keyLockIn(locks);
      // Whoever planted it can renew it for ever: its age tells nothing; its owner does.
      writeFileSync(file, other(new Date()));
      chownSync(file, OTHER_UID, OTHER_UID);
      expect(serveLocks(locks)).toBe("taken");
    },
  );

  it.runIf(root)(
    "one that this user cannot remove: refused at once, naming its owner, never waited on",
    () => {
      const locks = lockDir(0o1777);
      const file = keyLockIn(locks);
      writeFileSync(file, other(new Date()));
      chownSync(file, OTHER_UID - 1, OTHER_UID - 1);
      const journalDir = lockDir();
      chownSync(journalDir, OTHER_UID, OTHER_UID);
      const started = Date.now();
      const child = serveLocksInChild(locks, journalDir, OTHER_UID);
      expect(child.stdout.trim(), child.stderr).toBe(
        `the settlement key ${KEY} cannot be locked: its lock file ${file} is stale, but it belongs to uid ${OTHER_UID - 1} and this user cannot remove it (EPERM): remove it as uid ${OTHER_UID - 1} or root, or use a lock directory only this user can write`,
      );
      expect(Date.now() - started).toBeLessThan(15_000);
    },
    30_000,
  );

  it("its holder renews it while it runs (FACILITATOR_LOCK_LEASE: 1 s)", async () => {
    const locks = lockDir();
    const journal = path.join(lockDir(), "renewing.jsonl");
    const held = lockForServe(journal, [KEY], {
      FACILITATOR_LOCK_DIR: locks,
      FACILITATOR_LOCK_LEASE: "1",
    });
    try {
      const first = statSync(keyLockIn(locks)).mtimeMs;
      await new Promise((r) => setTimeout(r, 800));
      const lock = JSON.parse(readFileSync(keyLockIn(locks), "utf8"));
      expect(statSync(keyLockIn(locks)).mtimeMs).toBeGreaterThan(first);
      expect(Date.now() - Date.parse(lock.renewed)).toBeLessThan(500);
      expect(lock.lease).toBe(1000);
    } finally {
      held.release();
    }
  });

  it("a lease that is not a number of seconds is a usage error", () => {
    expect(serveLocks(lockDir(), { FACILITATOR_LOCK_LEASE: "soon" })).toBe(
      "FACILITATOR_LOCK_LEASE must be a number of seconds from 1 to 86400",
    );
  });
});
