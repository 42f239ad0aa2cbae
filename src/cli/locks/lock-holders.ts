/**
 * Whether a lock file's holder still runs. On this host: its pid runs, started when the lock
 * says (a reused pid, or a planted lock naming pid 1, does not match), in this boot, as the user
 * that owns the lock file (a process writes its own lock). On another host, nothing can be
 * checked from here: the holder renews its lock while it runs, and one not renewed within its
 * lease is stale. Its age is only worth something in a file this user (or root) owns: a facilitator
 * of ours on another host writes the shared volume as the same user, while a file of another user
 * (planted in a sticky directory) can be renewed by its owner for ever: it is not trusted.
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import { ourUid, trustedOwner } from "./lock-files.js";

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
  /** When the holder last renewed it (ISO 8601). */
  readonly renewed?: string | undefined;
  /** How long (ms) it counts on another host without being renewed. */
  readonly lease?: number | undefined;
  /** Tells this taking of the lock from any other. */
  readonly token: string;
}

/** How long a lock counts on another host without being renewed, unless it says otherwise. */
export const DEFAULT_LEASE_MS = 60_000;
/** Bounds on the lease a lock file may claim. */
export const MIN_LEASE_MS = 1_000;
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

/** The lock file's owner and when it was last written. */
interface FileFacts {
  readonly uid: number;
  readonly mtimeMs: number;
}

export function holderRuns(holder: LockHolder, file: FileFacts): boolean {
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
  // Every facilitator on Linux records its start time: a lock without one names a process it
  // was not written by.
  if (holder.started !== started) return false;
  const uids = uidsOf(holder.pid);
  return !(ourUid !== undefined && uids && !uids.includes(file.uid));
}
