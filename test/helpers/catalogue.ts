/**
 * The bazaar catalogue's tests' parts: entries as a payment makes them, and the two stores that
 * keep them (a journal file, a fresh PostgreSQL database), each able to restart.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import {
  type CatalogueBounds,
  type CatalogueEntry,
  catalogueKey,
  DEFAULT_CATALOGUE_BOUNDS,
} from "../../src/bazaar/catalogue.js";
import type { SettlementStore } from "../../src/core/store.js";
import { Journal } from "../../src/store/journal.js";
import { PostgresStore } from "../../src/store/postgres.js";
import type { Postgres } from "./postgres.js";

export const PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
export const PAYER = "0x857b06519E91e3A54538791bDbb0E22373e36b66";
let clock = 1_800_000_000_000;
/** A second later than the last entry made. */
export const tick = () => {
  clock += 1_000;
  return clock;
};

export function entry(
  resource: string,
  options: {
    payTo?: string;
    payer?: string;
    network?: string;
    scheme?: string;
    type?: "http" | "mcp";
    toolName?: string;
    description?: string;
    tags?: string[];
    others?: string[];
    at?: number;
  } = {},
): CatalogueEntry {
  const payTo = options.payTo ?? PAYEE;
  const type = options.type ?? "http";
  return {
    key: catalogueKey(resource, options.toolName),
    resource,
    type,
    ...(options.toolName ? { toolName: options.toolName } : { method: "GET" }),
    description: options.description,
    tags: options.tags,
    bazaar: { info: { input: { type, method: "GET" } }, schema: { type: "object" } },
    otherExtensions: options.others ?? [],
    x402Version: 2,
    accepts: [
      {
        scheme: options.scheme ?? "exact",
        network: options.network ?? "eip155:84532",
        amount: "1000",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        payTo,
      },
    ],
    payTo,
    payer: options.payer ?? PAYER,
    lastUpdated: options.at ?? tick(),
  };
}

export const WIDE: CatalogueBounds = DEFAULT_CATALOGUE_BOUNDS;

export interface Kind {
  readonly name: string;
  make(): Promise<{
    store: SettlementStore;
    restart: () => Promise<SettlementStore>;
    lines?: () => Promise<number>;
  }>;
}

let files = 0;
/** The two stores, in `place()`: its PostgreSQL server and a directory for journal files. */
export const catalogueStores = (place: () => { postgres: Postgres; dir: string }): Kind[] => [
  {
    name: "journal file",
    async make() {
      const file = path.join(place().dir, `journal-${++files}.jsonl`);
      const store = new Journal(file);
      return {
        store,
        restart: async () => {
          store.close();
          return new Journal(file);
        },
        lines: async () => (await readFile(file, "utf8")).split("\n").filter(Boolean).length,
      };
    },
  },
  {
    name: "postgres",
    async make() {
      const url = await place().postgres.freshDatabase();
      const store = await PostgresStore.open(url, { signers: [] });
      return {
        store,
        restart: async () => {
          await store.close();
          return PostgresStore.open(url, { signers: [] });
        },
      };
    },
  },
];

export const resources = async (store: SettlementStore, filter = {}, limit = 100, offset = 0) =>
  (await store.catalogue?.list(filter, limit, offset))?.items.map((e) => e.resource);
