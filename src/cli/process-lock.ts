/**
 * Lock files held by a process: created with O_EXCL, holding who holds them (pid, host, the
 * process's start time and the boot it runs in, the command, since when). A lock whose process is
 * gone is stale and taken over, so a killed process never blocks the next one; the start time
 * tells a reused pid from the process that wrote the lock. A lock is held by the process, not by
 * a thread: one this process already holds is taken again without waiting (re-entrant).
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** What holds it: "facilitator serve", "facilitator settle". */
  readonly command: string;
  /** When it was taken (ISO 8601). */
  readonly since: string;
  /** Linux: the process's start time (clock ticks since boot), which a reused pid does not share. */
  readonly started?: string | undefined;
  /** Linux: the boot the process runs in. */
  readonly boot?: string | undefined;
  /** Where a serve listens, once it does. */
  readonly url?: string | undefined;
  /** Tells this taking of the lock from any other. */
  readonly token: string;
}

export interface HeldLock {
  readonly file: string;
  /** Adds to what the lock file says (a serve's URL once it listens). */
  update(extra: { url?: string }): void;
  release(): void;
}

/** Who holds a lock is no secret (a pid, a command, a URL): other users may read it. */
const LOCK_MODE = 0o644;
/** A lock file whose content cannot be parsed is being written, or was left half-written. */
const UNREADABLE_STALE_MS = 5_000;
/** Breaking a stale lock takes microseconds; a breaker older than this was killed mid-way. */
const BREAKER_STALE_MS = 10_000;

function readOnce(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A lock file's text; undefined when it is gone, null when it cannot be read (another user's). */
function readLock(file: string): string | undefined | null {
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? undefined : null;
  }
}

const bootId = readOnce("/proc/sys/kernel/random/boot_id");

/** Field 22 of /proc/PID/stat (after the parenthesised name, which may hold spaces). */
function startTimeOf(pid: number): string | undefined {
  const stat = readOnce(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

const ourStart = startTimeOf(process.pid);

/** Locks this process holds: file → the token in it and how many times it was taken. */
const held = new Map<string, { token: string; count: number; holder: LockHolder }>();

function releaseAllAtExit(): void {
  for (const [file, lock] of held) removeIfOurs(file, lock.token);
  held.clear();
}

function parse(text: string | undefined): LockHolder | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid !== "number" || typeof value.token !== "string") return undefined;
    return value as LockHolder;
  } catch {
    return undefined;
  }
}

function removeIfOurs(file: string, token: string): void {
  try {
    if (parse(readFileSync(file, "utf8"))?.token === token) unlinkSync(file);
  } catch {
    // Already gone.
  }
}

function isOurs(holder: LockHolder): boolean {
  return (
    holder.pid === process.pid &&
    holder.host === os.hostname() &&
    holder.started === ourStart &&
    holder.boot === bootId
  );
}

/**
 * Whether the holder still runs. A holder on another host cannot be checked from here: it counts
 * as running (the message names the host and the lock file).
 */
export function isRunning(holder: LockHolder): boolean {
  if (holder.host !== os.hostname()) return true;
  if (holder.boot && bootId && holder.boot !== bootId) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  const started = startTimeOf(holder.pid);
  return !(holder.started && started && started !== holder.started);
}

/**
 * Removes `file` if it still holds `text` (the stale content that was judged). One process at a
 * time does this (the breaker file), so two never remove a lock a third has just taken.
 */
function breakStale(file: string, text: string): void {
  const breaker = `${file}.break`;
  let fd: number;
  try {
    fd = openSync(breaker, "wx", 0o600);
  } catch {
    try {
      if (Date.now() - statSync(breaker).mtimeMs > BREAKER_STALE_MS) unlinkSync(breaker);
    } catch {
      // Gone meanwhile.
    }
    return;
  }
  closeSync(fd);
  try {
    if (readLock(file) === text) unlinkSync(file);
  } catch {
    // Gone meanwhile.
  } finally {
    unlinkSync(breaker);
  }
}

function handle(file: string): HeldLock {
  let released = false;
  return {
    file,
    update(extra) {
      const lock = held.get(file);
      if (!lock || released) return;
      lock.holder = { ...lock.holder, ...extra };
      // Replaced whole (rename), so a reader never sees half of it.
      const next = `${file}.${process.pid}.tmp`;
      writeFileSync(next, JSON.stringify(lock.holder), { mode: LOCK_MODE });
      renameSync(next, file);
    },
    release() {
      if (released) return;
      released = true;
      const lock = held.get(file);
      if (!lock || --lock.count > 0) return;
      held.delete(file);
      removeIfOurs(file, lock.token);
      if (held.size === 0) process.off("exit", releaseAllAtExit);
    },
  };
}

/** A lock another thread of this process holds: taken again, given back by that thread. */
const borrowed = (file: string): HeldLock => ({
  file,
  update: () => undefined,
  release: () => undefined,
});

export type Attempt =
  | { readonly ok: true; readonly lock: HeldLock }
  /** Held by a running process (`holder`), or by one whose lock file cannot be read yet. */
  | { readonly ok: false; readonly holder: LockHolder | undefined };

/** Takes `file` if no running process holds it; never waits. */
export function tryLock(file: string, command: string): Attempt {
  const mine = held.get(file);
  if (mine) {
    mine.count++;
    return { ok: true, lock: handle(file) };
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const holder: LockHolder = {
    pid: process.pid,
    host: os.hostname(),
    command,
    since: new Date().toISOString(),
    started: ourStart,
    boot: bootId,
    token: randomBytes(12).toString("hex"),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number | undefined;
    try {
      fd = openSync(file, "wx", LOCK_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (fd !== undefined) {
      try {
        writeSync(fd, JSON.stringify(holder));
      } finally {
        closeSync(fd);
      }
      if (held.size === 0) process.on("exit", releaseAllAtExit);
      held.set(file, { token: holder.token, count: 1, holder });
      return { ok: true, lock: handle(file) };
    }
    const text = readLock(file);
    if (text === undefined) continue; // Gone meanwhile: try again.
    // Another user's lock this one may not read: held, whoever holds it.
    if (text === null) return { ok: false, holder: undefined };
    const other = parse(text);
    if (other && isOurs(other)) return { ok: true, lock: borrowed(file) };
    let stale: boolean;
    if (other) stale = !isRunning(other);
    else {
      try {
        stale = Date.now() - statSync(file).mtimeMs > UNREADABLE_STALE_MS;
      } catch {
        continue;
      }
    }
    if (!stale) return { ok: false, holder: other };
    breakStale(file, text);
  }
  return { ok: false, holder: parse(readLock(file) ?? undefined) };
}

/** Who holds `file` now, if a running process does. */
export function holderOf(file: string): LockHolder | undefined {
  const holder = parse(readLock(file) ?? undefined);
  return holder && isRunning(holder) ? holder : undefined;
}
