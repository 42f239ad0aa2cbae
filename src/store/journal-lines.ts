/** The records of the journal file, one JSON object per line. */
import type { EntryState, Network, NewEntry, RawTx, TxHash } from "../core/store.js";
import type { EntryLine } from "./journal-archive.js";
import type { CatalogueLine } from "./journal-catalogue.js";
import type { PreviousSchemeStateLine, SchemeStateLine } from "./journal-scheme-state.js";

export type Line =
  | ({ t: "send"; hash: TxHash; raw: RawTx; owner?: string } & NewEntry)
  | { t: "replace"; key: string; hash: TxHash; raw: RawTx }
  | { t: "state"; key: string; state: EntryState; owner?: string }
  /** A payment-identifier bound to a request, and its answer once final. */
  | { t: "id"; id: string; fingerprint: string; answer?: unknown }
  /** The schemes' state (journal-scheme-state.ts), and the lines a previous version wrote of it. */
  | SchemeStateLine
  | PreviousSchemeStateLine
  /** The bazaar catalogue (journal-catalogue.ts). */
  | CatalogueLine
  /** A compacted journal's: a settled entry whole; first, the archive segments that count. */
  | EntryLine
  | { t: "archive"; through: number };

/** A `send` or `entry` line read forward: an earlier version named its chain by an EVM chain id. */
export function withNetwork<L extends { readonly key: string }>(line: L): L & { network: Network } {
  const read = line as L & { network?: unknown; chainId?: unknown };
  if (typeof read.network === "string") return read as L & { network: Network };
  const { chainId, ...rest } = read;
  return { ...(rest as unknown as L), network: previousNetwork(chainId, line.key) };
}

function previousNetwork(chainId: unknown, key: string): Network {
  if (typeof chainId === "number" && chainId > 0) return `eip155:${chainId}`;
  if (key.startsWith("svm:")) return key.slice(4).split(":").slice(0, 2).join(":");
  // Nothing an earlier version wrote: kept, owned by no family.
  return `unknown:${String(chainId)}`;
}
