/** Process locks naming their holder; a dead holder's is taken over. Re-entrant per process. */
import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, unlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  bootId,
  checkLockDirectory,
  createExclusive,
  DEFAULT_LEASE_MS,
  holderRuns,
  type LockHolder,
  lastRenewal,
  look,
  ourStart,
  ourUid,
  replaceFile,
  type Seen,
} from "./lock-files.js";

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
/** Renewals per lease: a few missed (a busy event loop, a slow disk) do not lose the lock. */
const RENEWALS_PER_LEASE = 6;

interface Held {
  count: number;
  holder: LockHolder;
  renewer: NodeJS.Timeout;
}

/** Locks this process holds: file → what it wrote there and how many times it was taken. */
const held = new Map<string, Held>();

function releaseAllAtExit(): void {
  for (const [file, lock] of held) removeIfOurs(file, lock.holder.token);
  held.clear();
}

function parse(text: string | undefined): LockHolder | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(value.pid) || (value.pid as number) <= 0) return undefined;
    if (typeof value.token !== "string" || typeof value.host !== "string") return undefined;
    return value as LockHolder;
  } catch {
    return undefined;
  }
}

function tokenIn(seen: Seen): string | undefined {
  return seen.kind === "file" ? parse(seen.text)?.token : undefined;
}

function removeIfOurs(file: string, token: string): void {
  try {
    if (tokenIn(look(file)) === token) unlinkSync(file);
  } catch {
    // Already gone.
  }
}

/** Written by this process (another thread of it): the same process, and our own file. */
function isOurs(holder: LockHolder, uid: number): boolean {
  return (
    holder.pid === process.pid &&
    holder.host === os.hostname() &&
    holder.started === ourStart &&
    holder.boot === bootId &&
    (ourUid === undefined || uid === ourUid)
  );
}

/** Whether what is at a lock's name is held (and by whom), ours already, or stale. */
function judge(file: string, seen: Exclude<Seen, { kind: "gone" }>): Refused | "ours" | "stale" {
  // A link, a FIFO, a directory: not a lock anyone took, whoever put it there.
  if (seen.kind === "foreign") return "stale";
  if (seen.kind === "unreadable") {
    return {
      ok: false,
      holder: undefined,
      note: `its lock file ${file} belongs to uid ${seen.uid} and this user cannot read it: remove it (as uid ${seen.uid} or root) once no facilitator of that user uses it, or use a lock directory only this user can write`,
    };
  }
  const holder = parse(seen.text);
  if (!holder) {
    const young = Date.now() - seen.mtimeMs <= UNREADABLE_STALE_MS;
    return young ? { ok: false, holder: undefined } : "stale";
  }
  if (isOurs(holder, seen.uid)) return "ours";
  if (!holderRuns(holder, seen)) return "stale";
  return { ok: false, holder, renewedAt: lastRenewal(holder, seen.mtimeMs) };
}

/** Same content as judged: not replaced by a lock another process has just taken. */
function unchanged(now: Seen, judged: Seen): boolean {
  if (judged.kind === "foreign") return now.kind === "foreign";
  return now.kind === "file" && judged.kind === "file" && now.text === judged.text;
}

/** Removes stale `file` if still as judged, one breaker at a time; returns why not, if so. */
function breakStale(file: string, judged: Exclude<Seen, { kind: "gone" }>): string | undefined {
  const breaker = `${file}.break`;
  try {
    createExclusive(breaker, "", 0o600);
  } catch {
    let uid: number | undefined;
    try {
      const stats = lstatSync(breaker);
      uid = stats.uid;
      if (Date.now() - stats.mtimeMs > BREAKER_STALE_MS) unlinkSync(breaker);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Left (or planted) by another user in a sticky directory: it would block every breaking.
      if (code === "EPERM" || code === "EACCES") {
        return `its lock file ${file} is stale, but ${breaker}, left by uid ${uid}, keeps it from being removed and this user cannot remove that (${code}): remove it as uid ${uid} or root, or use a lock directory only this user can write`;
      }
    }
    return undefined;
  }
  try {
    if (unchanged(look(file), judged)) unlinkSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const what = judged.kind === "foreign" ? `is ${judged.what}, not a lock` : "is stale";
    if (code === "EPERM" || code === "EACCES") {
      return `its lock file ${file} ${what}, but it belongs to uid ${judged.uid} and this user cannot remove it (${code}): remove it as uid ${judged.uid} or root, or use a lock directory only this user can write`;
    }
    if (code !== "ENOENT")
      return `its lock file ${file} ${what}, and removing it failed (${code}): remove it`;
  } finally {
    try {
      unlinkSync(breaker);
    } catch {
      // Removed as stale by another process.
    }
  }
  return undefined;
}

/** Rewrites our lock file with `extra` added, if it still is ours (never over a lock taken over). */
function rewrite(file: string, extra: Partial<LockHolder>): void {
  const lock = held.get(file);
  if (!lock) return;
  lock.holder = { ...lock.holder, ...extra };
  if (tokenIn(look(file)) !== lock.holder.token) return;
  replaceFile(file, JSON.stringify(lock.holder), LOCK_MODE);
}

function renew(file: string): void {
  try {
    rewrite(file, { renewed: new Date().toISOString() });
  } catch {
    // A full disk: the next renewal tries again, and the lease allows a few missed.
  }
}

function handle(file: string): HeldLock {
  let released = false;
  return {
    file,
    update(extra) {
      if (!released) rewrite(file, extra);
    },
    release() {
      if (released) return;
      released = true;
      const lock = held.get(file);
      if (!lock || --lock.count > 0) return;
      held.delete(file);
      clearInterval(lock.renewer);
      removeIfOurs(file, lock.holder.token);
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

/** Held by a running `holder`, by what `note` describes, or by a lock file being written. */
export interface Refused {
  readonly ok: false;
  readonly holder: LockHolder | undefined;
  readonly note?: string | undefined;
  /** A holder on another host: when it last renewed the lock (ms since the epoch). */
  readonly renewedAt?: number | undefined;
}

export type Attempt = { readonly ok: true; readonly lock: HeldLock } | Refused;

/** Takes `file` if no running process holds it; never waits. Throws UnsafeLockDirectory. */
export function tryLock(file: string, command: string, lease?: number): Attempt {
  const mine = held.get(file);
  if (mine) {
    mine.count++;
    return { ok: true, lock: handle(file) };
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  checkLockDirectory(path.dirname(file));
  const holder: LockHolder = {
    pid: process.pid,
    host: os.hostname(),
    command,
    since: new Date().toISOString(),
    started: ourStart,
    boot: bootId,
    lease,
    token: randomBytes(12).toString("hex"),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      createExclusive(file, JSON.stringify(holder), LOCK_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const seen = look(file);
      if (seen.kind === "gone") continue;
      const verdict = judge(file, seen);
      if (verdict === "ours") return { ok: true, lock: borrowed(file) };
      if (verdict !== "stale") return verdict;
      const note = breakStale(file, seen);
      if (note) return { ok: false, holder: undefined, note };
      continue;
    }
    if (held.size === 0) process.on("exit", releaseAllAtExit);
    const every = (lease ?? DEFAULT_LEASE_MS) / RENEWALS_PER_LEASE;
    const renewer = setInterval(() => renew(file), every).unref();
    held.set(file, { count: 1, holder, renewer });
    return { ok: true, lock: handle(file) };
  }
  // Still there after three tries (another process was breaking it): held, by whom if it runs.
  return { ok: false, holder: holderOf(file) };
}

/** Who holds `file` now, if a running process does. */
export function holderOf(file: string): LockHolder | undefined {
  const seen = look(file);
  if (seen.kind !== "file") return undefined;
  const holder = parse(seen.text);
  return holder && holderRuns(holder, seen) ? holder : undefined;
}
