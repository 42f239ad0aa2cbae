/**
 * Files serve re-reads without a restart (the API keys file, the deny list): polled for a change
 * of modification time, size or inode, so an editor's save and a deploy's replacement (a new file
 * moved over the old) both count. What a file now says is applied only when it reads and checks
 * whole; otherwise what was applied before stays, and the log says why (never the content).
 */
import { type Stats, unwatchFile, watchFile } from "node:fs";

/** How often a watched file is looked at (FACILITATOR_RELOAD_POLL_MS overrides it, for tests). */
const POLL_MS = 1_000;

export interface Reload<T> {
  /** How the log names the file ("api keys file /etc/keys.json"). */
  readonly what: string;
  /** Reads and checks the file; throws (a UsageError saying what is wrong) when it cannot. */
  read(): T;
  /** Puts the new contents in force; answers what the log says of them (counts, never secrets). */
  apply(value: T): Record<string, unknown>;
}

export function reloadOnChange<T>(
  file: string,
  reload: Reload<T>,
  log: ((entry: Record<string, unknown>) => void) | undefined,
  env: NodeJS.ProcessEnv = process.env,
): () => void {
  const interval = Number(env.FACILITATOR_RELOAD_POLL_MS) || POLL_MS;
  const listener = (now: Stats, before: Stats) => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size && now.ino === before.ino) {
      return;
    }
    const time = new Date().toISOString();
    try {
      const said = reload.apply(reload.read());
      log?.({ time, event: "reloaded", file: reload.what, ...said });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log?.({
        time,
        event: "reload_refused",
        file: reload.what,
        message: `${message}; the previous contents stay in force`,
      });
    }
  };
  watchFile(file, { interval, persistent: false }, listener);
  return () => unwatchFile(file, listener);
}
