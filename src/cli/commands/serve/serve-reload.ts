/** serve re-reads the API keys file (`anonymous` fixed at start, for the Host check) and deny list
 * on change, applied only if read whole; a loosening one (maybe mid-write) waits 2 quiet polls. */
import { type Stats, statSync, unwatchFile, watchFile } from "node:fs";
import type { Facilitator } from "../../../facilitator.js";
import type { ApiKeys } from "../../../http/callers.js";
import { UsageError } from "../../io/errors.js";
import { readApiKeysFile } from "../../settings/api-keys.js";
import { readDenyList } from "../../settings/deny-list-file.js";
import type { ServeSettings } from "./serve-settings.js";

/** serve's request log on stderr; undefined when --quiet. */
export type Log = ((entry: Record<string, unknown>) => void) | undefined;

const isFile = (file: string) => statSync(file, { throwIfNoEntry: false })?.isFile() === true;

export function liveApiKeys(settings: ServeSettings, log: Log) {
  const file = settings.apiKeysFile;
  const atStart = settings.apiKeys;
  let current = atStart;
  if (!file || !atStart || !isFile(file)) return { current: () => current, stop: () => undefined };
  const check = (next: ApiKeys | undefined): ApiKeys => {
    if (!next) throw new UsageError(`the API keys file ${file} names no keys`);
    if (next.anonymous !== atStart.anonymous) {
      throw new UsageError(
        `the API keys file ${file} changes "anonymous", which takes a restart (the Host check is set up at start)`,
      );
    }
    return next;
  };
  const read = () => check(readApiKeysFile(file, "the API keys file", process.env, true));
  try {
    current = read();
  } catch {
    // Unreadable now: the keys read at start serve until the file is fixed.
  }
  const stop = reloadOnChange(
    file,
    {
      what: `API keys file ${file}`,
      read,
      apply: (next) => {
        current = next;
        return { keys: next.keys.length };
      },
    },
    log,
  );
  return { current: () => current, stop };
}

/** The deny list re-read into `facilitator` when its file changes. */
export function liveDenyList(settings: ServeSettings, facilitator: Facilitator, log: Log) {
  const file = settings.config.denyList;
  if (!file) return () => undefined;
  return reloadOnChange(
    file,
    {
      what: `deny list ${file}`,
      read: () => readDenyList(file),
      loosens: ({ list }) => !list.coversAll(facilitator.denyList ?? list),
      apply: ({ list }) => {
        facilitator.denyList = list;
        return { addresses: list.size };
      },
    },
    log,
  );
}

/** How often a watched file is looked at (FACILITATOR_RELOAD_POLL_MS overrides it, for tests). */
const POLL_MS = 1_000;

interface Reload<T> {
  /** How the log names the file ("api keys file /etc/keys.json"). */
  readonly what: string;
  /** Reads and checks the file; throws (a UsageError saying what is wrong) when it cannot. */
  read(): T;
  /** Whether putting `value` in force lets through what is refused now; absent: never. */
  loosens?(value: T): boolean;
  /** Puts the new contents in force; answers what the log says of them (counts, never secrets). */
  apply(value: T): Record<string, unknown>;
}

const sameFile = (a: Stats | undefined, b: Stats | undefined) =>
  a !== undefined &&
  b !== undefined &&
  a.mtimeMs === b.mtimeMs &&
  a.size === b.size &&
  a.ino === b.ino;

function reloadOnChange<T>(file: string, reload: Reload<T>, log: Log): () => void {
  const interval = Number(process.env.FACILITATOR_RELOAD_POLL_MS) || POLL_MS;
  let pending: NodeJS.Timeout | undefined;
  const attempt = (settled: boolean) => {
    clearTimeout(pending);
    pending = undefined;
    const time = new Date().toISOString();
    try {
      const before = statSync(file, { throwIfNoEntry: false });
      const value = reload.read();
      if (!settled && reload.loosens?.(value)) {
        // Looked at again after two polls: applied only if the file has not changed meanwhile.
        pending = setTimeout(() => {
          if (sameFile(before, statSync(file, { throwIfNoEntry: false }))) attempt(true);
        }, 2 * interval);
        pending.unref();
        const message = `the new version lets through what the one in force refuses; it is put in force if the file stays unchanged for ${(2 * interval) / 1000} s`;
        log?.({ time, event: "reload_waiting", file: reload.what, message });
        return;
      }
      const said = reload.apply(value);
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
  const listener = (now: Stats, before: Stats) => {
    if (sameFile(now, before)) return;
    attempt(false);
  };
  watchFile(file, { interval, persistent: false }, listener);
  return () => {
    clearTimeout(pending);
    unwatchFile(file, listener);
  };
}
