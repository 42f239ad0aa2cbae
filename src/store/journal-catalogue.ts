/**
 * The bazaar catalogue in the journal file: entries in memory, each change a line (`catalogue`,
 * `uncatalogue`); one process per file, so a put decides against memory and the line follows.
 */
import {
  boundRefusal,
  type Catalogue,
  type CatalogueBounds,
  type Catalogued,
  type CatalogueEntry,
  type CatalogueFilter,
  catalogueUpdate,
  newestFirst,
  passes,
  searchScore,
  searchText,
} from "../bazaar/catalogue.js";

export type CatalogueLine =
  | { t: "catalogue"; entry: CatalogueEntry }
  | { t: "uncatalogue"; key: string };

export const isCatalogueLine = (line: { t: string }): line is CatalogueLine =>
  line.t === "catalogue" || line.t === "uncatalogue";

export class JournalCatalogue implements Catalogue {
  readonly #entries = new Map<string, CatalogueEntry>();

  /** `write` applies a line (through apply) and resolves once it is durable. */
  constructor(private readonly write: (line: CatalogueLine) => Promise<void>) {}

  /** A line read back from the file, or just made here. */
  apply(line: CatalogueLine): void {
    if (line.t === "uncatalogue") this.#entries.delete(line.key);
    else this.#entries.set(line.entry.key, line.entry);
  }

  /** Everything kept, as a compacted file holds it. */
  lines(): CatalogueLine[] {
    return [...this.#entries.values()].map((entry) => ({ t: "catalogue", entry }));
  }

  async put(incoming: CatalogueEntry, bounds: CatalogueBounds): Promise<Catalogued> {
    const existing = this.#entries.get(incoming.key);
    const { entry, write } = catalogueUpdate(existing, incoming);
    if (existing) {
      if (write) await this.write({ t: "catalogue", entry });
      return { added: false };
    }
    let byPayee = 0;
    let byPayer = 0;
    for (const e of this.#entries.values()) {
      if (e.payTo.toLowerCase() === entry.payTo.toLowerCase()) byPayee += 1;
      if (e.payer.toLowerCase() === entry.payer.toLowerCase()) byPayer += 1;
    }
    const refused = boundRefusal(entry, { byPayee, byPayer }, bounds);
    if (refused) return { refused };
    // When full, the entries updated longest ago make room.
    const keep = Math.max(1, bounds.total) - 1;
    const newest = this.#entries.size > keep ? [...this.#entries.values()].sort(newestFirst) : [];
    const writes = newest.slice(keep).map((e) => this.write({ t: "uncatalogue", key: e.key }));
    writes.push(this.write({ t: "catalogue", entry }));
    await Promise.all(writes);
    return { added: true };
  }

  async list(filter: CatalogueFilter, limit: number, offset: number) {
    const matched = [...this.#entries.values()].filter((e) => passes(e, filter)).sort(newestFirst);
    return { items: matched.slice(offset, offset + limit), total: matched.length };
  }

  async search(filter: CatalogueFilter, words: readonly string[], limit: number, offset: number) {
    const scored = [...this.#entries.values()]
      .filter((e) => passes(e, filter))
      .map((entry) => ({ entry, score: searchScore(searchText(entry), words) }))
      .filter(({ score }) => score > 0)
      .sort((a, b) => b.score - a.score || newestFirst(a.entry, b.entry));
    return {
      items: scored.slice(offset, offset + limit).map(({ entry }) => entry),
      more: scored.length > offset + limit,
    };
  }
}
