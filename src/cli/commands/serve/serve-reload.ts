/**
 * What serve re-reads without a restart: the API keys file and the deny list. `anonymous` is
 * settled at start (the Host check depends on it): a file that changes it is refused.
 */
import { statSync } from "node:fs";
import type { Facilitator } from "../../../facilitator.js";
import type { ApiKeys } from "../../../http/callers.js";
import { UsageError } from "../../io/errors.js";
import { readApiKeysFile } from "../../settings/api-keys.js";
import { readDenyList } from "../../settings/deny-list-file.js";
import type { ServeSettings } from "./serve-settings.js";
import { reloadOnChange } from "./watched-file.js";

type Log = ((entry: Record<string, unknown>) => void) | undefined;

const isFile = (file: string) => statSync(file, { throwIfNoEntry: false })?.isFile() === true;

/** The API keys in force, re-read from their file when it changes. */
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
