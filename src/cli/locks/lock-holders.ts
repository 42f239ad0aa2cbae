/**
 * Whether a lock file's holder still runs. Here: its pid, start time, boot and user match (a
 * reused pid or a planted lock does not). On another host: renewed within its lease, trusted only
 * in a file this user or root owns (another user could renew a planted one for ever).
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import { ourUid, trustedOwner } from "./lock-files.js";

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
