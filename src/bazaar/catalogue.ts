/** The bazaar catalogue port; entries, filters and updates decided here so both stores agree. */
import { addressKey } from "../protocol/transaction-hash.js";
import { canonical } from "../protocol/words.js";
import type { Discovered } from "./bazaar.js";

export interface CatalogueEntry extends Discovered {
  /** What the entry is keyed by: the resource URL, and the MCP tool (catalogueKey). */
  readonly key: string;
  readonly x402Version: 2;
  /** Requirements paid through us: the owner's (`payTo`), then other payees', each newest first. */
  readonly accepts: readonly Readonly<Record<string, unknown>>[];
  /** Who received and made the payment that added it: the bounds count by them. */
  readonly payTo: string;
  readonly payer: string;
  /** When a payment last updated it (unix milliseconds). */
  readonly lastUpdated: number;
}

export interface CatalogueFilter {
  readonly type?: string | undefined;
  readonly payTo?: string | undefined;
  readonly scheme?: string | undefined;
  readonly network?: string | undefined;
  /** An extension key the entry carries (`bazaar` on every one). */
  readonly extension?: string | undefined;
}

/** How many entries the catalogue keeps in all, and how many one payee or one payer may add. */
export interface CatalogueBounds {
  readonly total: number;
  readonly perPayee: number;
  readonly perPayer: number;
}

export const DEFAULT_CATALOGUE_BOUNDS: CatalogueBounds = {
  total: 5_000,
  perPayee: 100,
  perPayer: 100,
};

/** What a put did: added a new entry, updated one (or found it unchanged), or refused. */
export type Catalogued = { readonly added: boolean } | { readonly refused: string };

export interface Catalogue {
  /** Adds or updates `entry` (catalogueUpdate), durably; a new one is refused past its payee's or
   * payer's bound, and when full the entries updated longest ago make room. */
  put(entry: CatalogueEntry, bounds: CatalogueBounds): Promise<Catalogued>;
  /** The entries that pass `filter`, newest first, from `offset`; and how many pass. */
  list(
    filter: CatalogueFilter,
    limit: number,
    offset: number,
  ): Promise<{ items: CatalogueEntry[]; total: number }>;
  /** Entries passing `filter` with any of `words`, most words then newest first, from `offset`. */
  search(
    filter: CatalogueFilter,
    words: readonly string[],
    limit: number,
    offset: number,
  ): Promise<{ items: CatalogueEntry[]; more: boolean }>;
}

/** Requirements kept per entry for its owner's payTo. */
export const ACCEPTS_KEPT = 4;
/** Requirements kept per entry for every other payTo together (oldest make room). */
export const OTHER_ACCEPTS_KEPT = 4;
/** An unchanged entry is written again (its lastUpdated) at most this often. */
export const REFRESH_MS = 60_000;

export const catalogueKey = (resource: string, toolName?: string | undefined) =>
  toolName === undefined ? resource : `${resource}#tool=${toolName}`;

const same = (a: string | undefined, b: string | undefined) =>
  (a ?? "").toLowerCase() === (b ?? "").toLowerCase();

/** Whether two payees are one: a Solana (base58) address in another case is another address. */
export const samePayee = (a: string, b: string) => addressKey(a) === addressKey(b);

const acceptKey = (a: Readonly<Record<string, unknown>>) =>
  [a.scheme, a.network, addressKey(String(a.asset)), addressKey(String(a.payTo))].join(" ");

/** Only the owner's payment brings content, its requirements first so others cannot push them
 * out; `write`: more than time changed. */
export function catalogueUpdate(
  existing: CatalogueEntry | undefined,
  incoming: CatalogueEntry,
): { entry: CatalogueEntry; write: boolean } {
  if (!existing) return { entry: incoming, write: true };
  const seen = new Set<string>();
  const merged = [...incoming.accepts, ...existing.accepts].filter((a) => {
    const key = acceptKey(a);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const owners = (a: Readonly<Record<string, unknown>>) =>
    samePayee(String(a.payTo), existing.payTo);
  const accepts = [
    ...merged.filter(owners).slice(0, ACCEPTS_KEPT),
    ...merged.filter((a) => !owners(a)).slice(0, OTHER_ACCEPTS_KEPT),
  ];
  const content = samePayee(incoming.payTo, existing.payTo) ? incoming : existing;
  const entry: CatalogueEntry = {
    ...content,
    key: existing.key,
    accepts,
    payTo: existing.payTo,
    payer: existing.payer,
    lastUpdated: incoming.lastUpdated,
  };
  const unchanged =
    canonical({ ...entry, lastUpdated: 0 }) === canonical({ ...existing, lastUpdated: 0 });
  return { entry, write: !unchanged || incoming.lastUpdated - existing.lastUpdated >= REFRESH_MS };
}

/** Why a new entry of `payTo` and `payer` is refused, given the counts they already hold. */
export function boundRefusal(
  entry: CatalogueEntry,
  held: { byPayee: number; byPayer: number },
  bounds: CatalogueBounds,
): string | undefined {
  if (held.byPayee >= bounds.perPayee) {
    return `the payee ${entry.payTo} already has ${held.byPayee} resources catalogued, the most one payee may add`;
  }
  if (held.byPayer >= bounds.perPayer) {
    return `the payer ${entry.payer} already added ${held.byPayer} resources to the catalogue, the most one payer may`;
  }
  return undefined;
}

/** Whether `entry` passes every filter given. */
export function passes(entry: CatalogueEntry, filter: CatalogueFilter): boolean {
  const any = (name: "scheme" | "network" | "payTo", wanted: string | undefined) =>
    wanted === undefined ||
    entry.accepts.some((a) =>
      name === "payTo" ? same(a.payTo as string, wanted) : a[name] === wanted,
    );
  return (
    (filter.type === undefined || entry.type === filter.type) &&
    any("payTo", filter.payTo) &&
    any("scheme", filter.scheme) &&
    any("network", filter.network) &&
    (filter.extension === undefined ||
      filter.extension === "bazaar" ||
      entry.otherExtensions.includes(filter.extension))
  );
}

/** What a search looks in, lower-cased: the URL, names, description, tags, tool and its words. */
export function searchText(entry: CatalogueEntry): string {
  const input = (entry.bazaar.info as { input?: { description?: unknown } } | undefined)?.input;
  return [
    entry.resource,
    entry.serviceName,
    entry.description,
    ...(entry.tags ?? []),
    entry.toolName,
    entry.type,
    typeof input?.description === "string" ? input.description : undefined,
  ]
    .filter((part): part is string => typeof part === "string")
    .join("\n")
    .toLowerCase();
}

/** How many of `words` an entry's searchText holds. */
export const searchScore = (text: string, words: readonly string[]) =>
  words.filter((word) => text.includes(word)).length;

/** Newest first, then by key: the order list and search answer in. */
export const newestFirst = (a: CatalogueEntry, b: CatalogueEntry) =>
  b.lastUpdated - a.lastUpdated || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
