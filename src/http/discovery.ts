/** GET /discovery/resources and /discovery/search, in the shapes `withBazaar` reads. */
import type { CatalogueFilter } from "../bazaar/catalogue.js";
import { type Discovery, discoveryResource } from "../bazaar/discovery.js";
import { type Answer, FacilitatorError, failed } from "../protocol/errors.js";

const DEFAULT_LIMIT = 20;
/** Most results one page holds. */
const PAGE_LIMIT = 100;
const QUERY_LIMIT = 256;
/** Words of a search query used, at most (the first ones). */
const WORDS_KEPT = 8;
/** Unknown parameters named back, at most. */
const UNAPPLIED_KEPT = 10;

const FILTER_NAMES = ["type", "payTo", "scheme", "network", "extensions"] as const;
/** Each filter's shape, and what it must be, in words. */
const FILTERS: Readonly<Record<(typeof FILTER_NAMES)[number], [RegExp, string]>> = {
  type: [/^[a-z][a-z0-9-]{0,31}$/, "a resource type such as http or mcp"],
  payTo: [/^[A-Za-z0-9]{1,128}$/, "an address (letters and digits only)"],
  scheme: [/^[a-z0-9][a-z0-9-]{0,63}$/i, "a scheme name such as exact"],
  network: [/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, "a CAIP-2 network id such as eip155:8453"],
  extensions: [/^[A-Za-z0-9._:-]{1,64}$/, "one extension key such as bazaar"],
};
const KNOWN = {
  "/discovery/resources": [...FILTER_NAMES, "limit", "offset"],
  "/discovery/search": [...FILTER_NAMES, "query", "limit", "cursor"],
} as const;

class Malformed extends Error {}

export async function discoveryAnswer(
  discovery: Discovery | undefined,
  path: "/discovery/resources" | "/discovery/search",
  url: string,
): Promise<Answer> {
  if (!discovery) return failed("not_found", "discovery is off: this store keeps no catalogue");
  const params = new URLSearchParams(url.split("?")[1] ?? "");
  const known: readonly string[] = KNOWN[path];
  const unapplied = [...new Set(params.keys())].filter((name) => !known.includes(name));
  try {
    const one = (name: string): string | undefined => {
      const values = params.getAll(name);
      if (values.length > 1) throw new Malformed(`give ${name} once`);
      return values[0];
    };
    const filter: CatalogueFilter = {};
    for (const name of FILTER_NAMES) {
      const value = one(name);
      if (value === undefined) continue;
      const [shape, words] = FILTERS[name];
      if (!shape.test(value)) throw new Malformed(`${name} must be ${words}`);
      Object.assign(filter, { [name === "extensions" ? "extension" : name]: value });
    }
    const limit = Math.min(count(one("limit"), "limit", DEFAULT_LIMIT, 1), PAGE_LIMIT);
    const named =
      unapplied.length > 0
        ? { unappliedFilters: unapplied.slice(0, UNAPPLIED_KEPT).map((n) => n.slice(0, 40)) }
        : {};
    if (path === "/discovery/resources") {
      const offset = count(one("offset"), "offset", 0, 0);
      const { items, total } = await discovery.catalogue.list(filter, limit, offset);
      return {
        ok: true,
        body: {
          x402Version: 2,
          items: items.map(discoveryResource),
          pagination: { limit, offset, total },
          ...named,
        },
      };
    }
    const query = one("query");
    if (query === undefined || query.trim() === "" || query.length > QUERY_LIMIT) {
      throw new Malformed(`query must be given, 1 to ${QUERY_LIMIT} characters`);
    }
    const offset = cursorOffset(one("cursor"));
    const words = [
      ...new Set([...query.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0])),
    ].slice(0, WORDS_KEPT);
    const found =
      words.length > 0
        ? await discovery.catalogue.search(filter, words, limit, offset)
        : { items: [], more: false };
    return {
      ok: true,
      body: {
        x402Version: 2,
        resources: found.items.map(discoveryResource),
        partialResults: false,
        pagination: { limit, cursor: found.more ? cursorOf(offset + limit) : null },
        ...named,
      },
    };
  } catch (error) {
    if (error instanceof Malformed) return failed("invalid_request", error.message);
    // The store away: 503 store_unavailable, said as such.
    if (error instanceof FacilitatorError) return { ok: false, failure: error.failure };
    throw error;
  }
}

function count(value: string | undefined, name: string, fallback: number, least: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,7}$/.test(value) || Number(value) < least) {
    throw new Malformed(`${name} must be an integer of at least ${least}`);
  }
  return Number(value);
}

/** Cursors are opaque to callers: the offset of the next page, base64url. */
const cursorOf = (offset: number) => Buffer.from(`offset:${offset}`).toString("base64url");

function cursorOffset(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const match = /^offset:(\d{1,7})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match || cursor.length > 32) throw new Malformed("cursor is not one this server gave");
  return Number(match[1]);
}
