/**
 * What serve re-reads while it runs, without a restart: the deny list. A new version is put in
 * force only when it reads and checks whole; otherwise the old stays and the log says why
 * (watched-file.ts).
 */
import type { Facilitator } from "../../facilitator.js";
import { readDenyList } from "../deny-list-file.js";
import { reloadOnChange } from "../watched-file.js";
import type { ServeSettings } from "./serve-settings.js";

type Log = ((entry: Record<string, unknown>) => void) | undefined;

/** The deny list re-read into `facilitator` when its file changes. */
export function liveDenyList(settings: ServeSettings, facilitator: Facilitator, log: Log) {
  const file = settings.config.denyList;
  if (!file) return () => undefined;
  return reloadOnChange(
    file,
    {
      what: `deny list ${file}`,
      read: () => readDenyList(file),
      apply: ({ list }) => {
        facilitator.denyList = list;
        return { addresses: list.size };
      },
    },
    log,
  );
}
