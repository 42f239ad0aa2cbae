/** Lock files safe where others may write (exclusive, never through a link), and their holders. */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  type Stats,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import os from "node:os";

/** Not every platform has it (Windows): there, O_EXCL alone keeps creation exclusive. */
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
/** The sticky bit: only a file's owner (or root) may remove or rename it. */
const STICKY = 0o1000;
/** Far above any lock file; a planted huge file is not read whole. */
const MAX_LOCK_BYTES = 16 * 1024;

/** This process's user (files it creates are owned by it); undefined where there are no uids. */
export const ourUid = process.geteuid?.();

/** A directory lock files may not live in: `reason` says why, worded to follow its path. */
export class UnsafeLockDirectory extends Error {
  override readonly name = "UnsafeLockDirectory";
  constructor(
    readonly dir: string,
    readonly reason: string,
  ) {
    super(`the lock directory ${dir} ${reason}`);
  }
}

/** Refuses a directory other users could write (without the sticky bit), own, or link to. */
export function checkLockDirectory(dir: string): void {
  if (ourUid === undefined) return;
  const link = lstatSync(dir);
  if (link.isSymbolicLink() && !trustedOwner(link.uid)) {
    throw new UnsafeLockDirectory(dir, `is a symbolic link owned by uid ${link.uid}`);
  }
  const stats = statSync(dir);
  if (!trustedOwner(stats.uid)) {
    throw new UnsafeLockDirectory(dir, `is owned by uid ${stats.uid}, not by this user`);
  }
  const shared = stats.mode & (ourPrivateGroup(stats.gid) ? 0o002 : 0o022);
  if (shared && !(stats.mode & STICKY)) {
    const who = stats.mode & 0o002 ? "every user" : "its group";
    throw new UnsafeLockDirectory(
      dir,
      `can be written by ${who} (mode 0${(stats.mode & 0o7777).toString(8)}) and has no sticky bit`,
    );
  }
}

/** Us, or root (who can do anything anyway). */
export const trustedOwner = (uid: number) => uid === ourUid || uid === 0;

/** Whether `gid` is this user's private group (umask 002 makes directories writable by it). */
function ourPrivateGroup(gid: number): boolean {
  if (gid !== process.getegid?.()) return false;
  try {
    const user = os.userInfo().username;
    const line = readFileSync("/etc/group", "utf8")
      .split("\n")
      .find((entry) => entry.split(":")[2] === String(gid));
    const [name, , , members = ""] = (line ?? "").split(":");
    return name === user && members.split(",").every((m) => m === "" || m === user);
  } catch {
    // No such user or no /etc/group (groups from a directory service): not known to be private.
    return false;
  }
}

/** Creates `file` with `text`, failing (EEXIST) if anything, a symbolic link too, is there. */
export function createExclusive(file: string, text: string, mode: number): void {
  const fd = openSync(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW,
    mode,
  );
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `file` whole (never seen half-written): an exclusive temporary file renamed over it. */
export function replaceFile(file: string, text: string, mode: number): void {
  for (let attempt = 0; ; attempt++) {
    const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      createExclusive(temporary, text, mode);
    } catch (error) {
      // Something planted at that name: another name, a few times.
      if ((error as NodeJS.ErrnoException).code === "EEXIST" && attempt < 3) continue;
      throw error;
    }
    try {
      renameSync(temporary, file);
    } catch (error) {
      unlinkSync(temporary);
      throw error;
    }
    return;
  }
}

/** What is at a lock file's name, read without following a symbolic link. */
export type Seen =
  | { readonly kind: "gone" }
  /** A symbolic link, a FIFO, a directory: nothing a lock writes. */
  | { readonly kind: "foreign"; readonly what: string; readonly uid: number }
  /** A file this user may not read (another user's, mode 0600). */
  | { readonly kind: "unreadable"; readonly uid: number; readonly mtimeMs: number }
  | {
      readonly kind: "file";
      readonly text: string;
      readonly uid: number;
      readonly mtimeMs: number;
    };

/** A symbolic link, a FIFO, a directory (nothing a lock writes); undefined for a regular file. */
function foreign(stats: Stats): Seen | undefined {
  if (stats.isFile()) return undefined;
  let what = "not a regular file";
  if (stats.isSymbolicLink()) what = "a symbolic link";
  else if (stats.isDirectory()) what = "a directory";
  else if (stats.isFIFO()) what = "a FIFO";
  return { kind: "foreign", what, uid: stats.uid };
}

export function look(file: string): Seen {
  let fd: number;
  try {
    // Non-blocking: opening a planted FIFO would otherwise wait for a writer.
    fd = openSync(file, constants.O_RDONLY | NOFOLLOW | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { kind: "gone" };
    try {
      const stats = lstatSync(file);
      return foreign(stats) ?? { kind: "unreadable", uid: stats.uid, mtimeMs: stats.mtimeMs };
    } catch {
      return { kind: "gone" };
    }
  }
  try {
    const stats = fstatSync(fd);
    const notFile = foreign(stats);
    if (notFile) return notFile;
    const buffer = Buffer.alloc(MAX_LOCK_BYTES);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, length).toString("utf8").trim();
    return { kind: "file", text, uid: stats.uid, mtimeMs: stats.mtimeMs };
  } finally {
    closeSync(fd);
  }
}

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** "facilitator serve", "facilitator settle". */
  readonly command: string;
  readonly since: string;
  /** Linux: the process's start time (clock ticks since boot), which a reused pid does not share. */
  readonly started?: string | undefined;
  readonly boot?: string | undefined;
  readonly url?: string | undefined;
  readonly renewed?: string | undefined;
  readonly lease?: number | undefined;
  /** Tells this taking of the lock from any other. */
  readonly token: string;
}

/** How long a lock counts on another host without being renewed, unless it says otherwise. */
export const DEFAULT_LEASE_MS = 60_000;
const MIN_LEASE_MS = 1_000;
export const MAX_LEASE_MS = 86_400_000;

function readOnce(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

export const bootId = readOnce("/proc/sys/kernel/random/boot_id");

/** Field 22 of /proc/PID/stat (after the parenthesised name, which may hold spaces). */
function startTimeOf(pid: number): string | undefined {
  const stat = readOnce(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

/** Linux: this process's start time; undefined where there is no /proc. */
export const ourStart = startTimeOf(process.pid);

/** The real, effective, saved and file-system uids a process runs as. */
function uidsOf(pid: number): number[] | undefined {
  const line = readOnce(`/proc/${pid}/status`)
    ?.split("\n")
    .find((l) => l.startsWith("Uid:"));
  return line?.slice(4).trim().split(/\s+/).map(Number);
}

/** The lease a holder asked for, within bounds. */
export function leaseOf(holder: LockHolder): number {
  const lease = holder.lease;
  if (typeof lease !== "number" || !Number.isFinite(lease)) return DEFAULT_LEASE_MS;
  return Math.min(Math.max(lease, MIN_LEASE_MS), MAX_LEASE_MS);
}

/** When the holder last renewed it: the later of what it says and when its file was written. */
export function lastRenewal(holder: LockHolder, mtimeMs: number): number {
  return Math.max(mtimeMs, Date.parse(holder.renewed ?? "") || 0);
}

// Whether a lock's holder runs. Here: pid, start time, boot and user match (not a reused pid or a
// planted lock). Elsewhere: renewed within its lease, in a file we or root own (not a planted one).
export function holderRuns(holder: LockHolder, file: { uid: number; mtimeMs: number }): boolean {
  if (holder.host !== os.hostname()) {
    if (ourUid !== undefined && !trustedOwner(file.uid)) return false;
    return Date.now() - lastRenewal(holder, file.mtimeMs) <= leaseOf(holder);
  }
  if (holder.boot && bootId && holder.boot !== bootId) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  // No /proc here (macOS): the pid is all there is to check.
  if (ourStart === undefined) return true;
  const started = startTimeOf(holder.pid);
  // Hidden from this user (/proc mounted with hidepid): it cannot be told, so it counts.
  if (started === undefined) return true;
  // Every facilitator on Linux records its start time: without one, not written by that process.
  if (holder.started !== started) return false;
  const uids = uidsOf(holder.pid);
  return !(ourUid !== undefined && uids && !uids.includes(file.uid));
}
