/** One key, one writer: two processes on one key reuse nonces and can pay twice; two on one journal
 * miss each other's records. So the file journal locks journal and keys (PostgreSQL: leases). */
import os from "node:os";
import path from "node:path";
import { UsageError } from "../io/errors.js";
import { goneDevnetDir, staleDevnetMessage } from "../io/stale-devnet.js";
import { resolveSetting } from "../settings/setting-resolver.js";
import { SETTINGS } from "../settings/settings.js";
import { type LockHolder, leaseOf, UnsafeLockDirectory } from "./lock-files.js";
import { type Attempt, type HeldLock, holderOf, type Refused, tryLock } from "./process-lock.js";

const POLL_MS = 100;
const CMD = "facilitator settle";

/** What one lock guards, for messages, and its file. */
interface Guarded {
  readonly kind: "journal" | "key";
  readonly what: string;
  readonly file: string;
  /** How long it counts on another host unrenewed; the lock file says it to every reader. */
  readonly leaseMs: number;
}

/** The journal first, then the keys by address: every process takes them in one order. */
function guardedBy(
  journalPath: string,
  addresses: readonly string[],
  env: NodeJS.ProcessEnv,
): Guarded[] {
  // Key locks live in one place every process of the user agrees on, whatever its journal.
  const dir = resolveSetting(SETTINGS.lockDir, { env });
  const leaseMs = resolveSetting(SETTINGS.lockLease, { env });
  const journal = path.resolve(journalPath);
  const keys = [...new Set(addresses.map((a) => a.toLowerCase()))].sort();
  return [
    {
      kind: "journal",
      what: `the settlement journal ${journal}`,
      file: `${journal}.lock`,
      leaseMs,
    },
    ...keys.map((address) => ({
      kind: "key" as const,
      what: `the settlement key ${addresses.find((a) => a.toLowerCase() === address)}`,
      file: path.join(dir, `key-${address}.lock`),
      leaseMs,
    })),
  ];
}

/** Takes `guarded`'s lock if free; an unmakeable lock file or unsafe directory: a usage error. */
function attempt(guarded: Guarded, command: string): Attempt {
  // Not made again: a stopped devnet's directory would come back with only a lock in it.
  const gone = goneDevnetDir(guarded.file);
  if (gone) throw new UsageError(staleDevnetMessage(gone));
  try {
    return tryLock(guarded.file, command, guarded.leaseMs);
  } catch (error) {
    if (error instanceof UnsafeLockDirectory) throw unsafe(error, guarded);
    const code = (error as NodeJS.ErrnoException).code ?? "unusable";
    const fix =
      guarded.kind === "journal"
        ? "pass --journal FILE in a writable directory"
        : `set ${SETTINGS.lockDir.env} to a writable directory`;
    throw new UsageError(
      `cannot create the lock file ${guarded.file} for ${guarded.what} (${code}): ${fix}`,
    );
  }
}

function unsafe(error: UnsafeLockDirectory, guarded: Guarded): UsageError {
  const elsewhere =
    guarded.kind === "journal"
      ? "or keep the journal (--journal FILE) in such a directory"
      : `or set ${SETTINGS.lockDir.env} to such a directory`;
  return new UsageError(
    `${error.message}, so other users could plant files there that redirect or block the lock of ${guarded.what}: use a directory only this user can write, e.g. \`chmod 0700 ${error.dir}\` (or 0755, owned by this user; or the sticky bit, as /tmp has), ${elsewhere}`,
  );
}

/** "facilitator serve (pid 123, since 2025-...)", and where it listens; never anything secret. */
export function describeHolder(holder: LockHolder | undefined, file: string): string {
  if (!holder) return `another process (see its lock file ${file})`;
  const where = holder.host === os.hostname() ? "" : ` on host ${holder.host}`;
  const url = holder.url ? `, listening on ${holder.url}` : "";
  return `${holder.command} (pid ${holder.pid}${where}, since ${holder.since}${url})`;
}

/** Who holds a journal now (described), if a running process does. */
export function journalHolder(journalPath: string): string | undefined {
  const file = `${path.resolve(journalPath)}.lock`;
  const holder = holderOf(file);
  return holder && describeHolder(holder, file);
}

/** Who holds a refused lock; none that runs but a `note` (waiting would not help): a usage error. */
function heldBy(guarded: Guarded, tried: Refused): string {
  if (!tried.holder && tried.note) {
    throw new UsageError(`${guarded.what} cannot be locked: ${tried.note}`);
  }
  return describeHolder(tried.holder, guarded.file);
}

/** How a lock that is held clears, and when removing its file by hand is safe. */
function clearing(tried: Refused, file: string): string {
  const holder = tried.holder;
  if (!holder) return "";
  if (holder.host === os.hostname()) {
    return `; its lock ${file} goes when pid ${holder.pid} exits (and is taken over if that process was killed): never delete it while pid ${holder.pid} runs`;
  }
  const ago = Math.max(0, Math.round((Date.now() - (tried.renewedAt ?? 0)) / 1000));
  const lease = Math.round(leaseOf(holder) / 1000);
  return `; it cannot be checked from here, but it was renewed ${ago} s ago; it is taken over once not renewed for ${lease} s; if it no longer runs, delete ${file}`;
}

type Held = { readonly guarded: Guarded; readonly tried: Refused };

/** Takes the locks of `rest` in order into `locks`, up to one that is held: that one, if any. */
function takeUpTo(rest: Guarded[], locks: SettlementLocks, command: string): Held | undefined {
  for (let guarded = rest[0]; guarded; guarded = rest[0]) {
    const tried = attempt(guarded, command);
    if (!tried.ok) return { guarded, tried };
    locks.taken.push(tried.lock);
    rest.shift();
  }
  return undefined;
}

export class SettlementLocks {
  readonly taken: HeldLock[] = [];

  /** A serve's URL, once it listens: a settle refused for its key is told where to send. */
  listening(url: string): void {
    for (const lock of this.taken) lock.update({ url });
  }

  release(): void {
    for (const lock of this.taken.splice(0).reverse()) lock.release();
  }
}

/** serve's locks, held for its life by the supervising process; held elsewhere: a usage error. */
export function lockForServe(
  journalPath: string,
  addresses: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): SettlementLocks {
  const rest = guardedBy(journalPath, addresses, env);
  const locks = new SettlementLocks();
  try {
    const held = takeUpTo(rest, locks, "facilitator serve");
    if (!held) return locks;
    const { guarded, tried } = held;
    const holder = heldBy(guarded, tried);
    const advice =
      guarded.kind === "journal"
        ? "pass another --journal, or stop that process first"
        : "stop that process first, use another key, or let the replicas share a PostgreSQL store (--store), whose signer leases coordinate them";
    throw new UsageError(
      `${guarded.what} is in use by ${holder}: two processes sending with one key or writing one journal collide and can pay a payment twice; ${advice}${clearing(tried, guarded.file)}`,
      "key_in_use",
    );
  } catch (error) {
    locks.release();
    throw error;
  }
}

/** Why a settle did not get its turn in time: nothing was sent. */
export class TurnTimeout extends Error {
  override readonly name = "TurnTimeout";
}

/** settle's locks: waits its turn behind settles; a serve holding one: a usage error at once. */
export async function lockForSettle(
  journalPath: string,
  addresses: readonly string[],
  onWait: ((line: string) => void) | undefined,
  /** reconcile: a serve holding the key already follows its settlements; say that instead. */
  forReconcile: boolean,
): Promise<SettlementLocks> {
  const timeoutMs = resolveSetting(SETTINGS.lockTimeout, { env: process.env });
  const deadline = Date.now() + timeoutMs;
  const rest = guardedBy(journalPath, addresses, process.env);
  const locks = new SettlementLocks();
  try {
    for (let held = takeUpTo(rest, locks, CMD); held; held = takeUpTo(rest, locks, CMD)) {
      const { guarded, tried } = held;
      const holder = heldBy(guarded, tried);
      if (tried.holder?.command === "facilitator serve") {
        const target = tried.holder.url ? `${tried.holder.url}/settle` : "its /settle";
        throw new UsageError(
          forReconcile
            ? `${guarded.what} is in use by ${holder}: that serve reconciles by itself (it follows every settlement written down to its end), so there is nothing to do here; to reconcile from this command instead, stop that serve first`
            : `${guarded.what} is in use by ${holder}: send this payment to POST ${target} instead (two processes sending with one key can pay a payment twice), or stop that process first`,
          "key_in_use",
        );
      }
      if (Date.now() >= deadline) {
        throw new TurnTimeout(
          `${guarded.what} is in use by ${holder}, and this settle's turn did not come within ${Math.round(timeoutMs / 1000)} s (${SETTINGS.lockTimeout.env}); nothing was sent: settle again later${clearing(tried, guarded.file)}`,
        );
      }
      onWait?.(`waiting for ${holder}, which is using ${guarded.what}`);
      onWait = undefined;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } catch (error) {
    locks.release();
    throw error;
  }
  return locks;
}
