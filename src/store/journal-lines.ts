/** The records of the journal file, one JSON object per line. */
import type { Hex } from "viem";
import type { EntryState, NewEntry } from "../core/store.js";
import type { EntryLine } from "./journal-archive.js";
import type { CatalogueLine } from "./journal-catalogue.js";
import type { ArchiveLine } from "./journal-compaction.js";
import type { PreviousSchemeStateLine, SchemeStateLine } from "./journal-scheme-state.js";

export type Line =
  | ({ t: "send"; hash: Hex; raw: Hex; owner?: string } & NewEntry)
  | { t: "replace"; key: string; hash: Hex; raw: Hex }
  | { t: "state"; key: string; state: EntryState; owner?: string }
  /** A payment-identifier bound to a request, and its answer once final. */
  | { t: "id"; id: string; fingerprint: string; answer?: unknown }
  /** The schemes' state (journal-scheme-state.ts), and the lines a previous version wrote of it. */
  | SchemeStateLine
  | PreviousSchemeStateLine
  /** The bazaar catalogue (journal-catalogue.ts). */
  | CatalogueLine
  /** A compacted journal's: a settled entry whole, and the archive segments that count. */
  | EntryLine
  | ArchiveLine;
