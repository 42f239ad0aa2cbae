/** Bazaar discovery: `extensions.bazaar` read at verify and settle, catalogued once settles land;
 * EXTENSION-RESPONSES says how. Discovery never changes a payment's outcome. */
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import { BAZAAR, type Discovered, discover } from "./bazaar.js";
import {
  type Catalogue,
  type CatalogueBounds,
  type CatalogueEntry,
  catalogueKey,
  DEFAULT_CATALOGUE_BOUNDS,
} from "./catalogue.js";

export interface BazaarResponse {
  readonly status: "success" | "processing" | "rejected";
  readonly rejectedReason?: string;
  /** On success or processing: the fields dropped, in words. */
  readonly reason?: string;
}

/** Settles answered `submitted` watched at once, at most; how long, and how often. */
const WATCHED = 1_000;
const WATCH_MS = 10 * 60_000;
const WATCH_EVERY_MS = 2_000;

export interface DiscoveryOptions {
  readonly bounds?: Partial<CatalogueBounds> | undefined;
  /** The clock (tests). */
  readonly now?: (() => number) | undefined;
}

type Accepted = { readonly entry: CatalogueEntry; readonly notes: readonly string[] };

/** Where a settle stands, by its transaction: the settlement store (core/store.ts) is one. */
export interface TransactionLookup {
  findByTransaction(hash: string): Promise<{ readonly state: string } | undefined>;
}

export class Discovery {
  readonly bounds: CatalogueBounds;
  readonly #now: () => number;
  /** Settles answered `submitted`, by transaction: catalogued once the store says they landed. */
  readonly #watched = new Map<string, Accepted & { readonly until: number }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly catalogue: Catalogue,
    private readonly store: TransactionLookup,
    options: DiscoveryOptions = {},
  ) {
    this.bounds = { ...DEFAULT_CATALOGUE_BOUNDS, ...options.bounds };
    this.#now = options.now ?? Date.now;
  }

  /** A verified payment: whether its discovery would be catalogued. */
  afterVerify(request: PaymentRequest, result: VerifyResult): VerifyResult {
    if (!result.ok) return result;
    const read = this.#read(request, result.payer);
    if (!read) return result;
    const bazaar: BazaarResponse =
      "entry" in read
        ? processing(read.notes, "valid; catalogued once this payment's settle lands")
        : read;
    return { ...result, extensionResponses: { [BAZAAR]: bazaar } };
  }

  /** A settled payment: catalogued when it landed, watched when only submitted. */
  async afterSettle(
    request: PaymentRequest,
    result: SettleResult,
    waitUntil: WaitUntil,
  ): Promise<SettleResult> {
    if (!result.ok) return result;
    const read = this.#read(request, result.payer);
    if (!read) return result;
    let bazaar: BazaarResponse;
    if (!("entry" in read)) bazaar = read;
    else if (waitUntil === "simulated") {
      bazaar = rejected("a simulated settle sends nothing, so nothing was catalogued");
    } else if (waitUntil === "submitted" && result.transactionHash !== "") {
      bazaar = this.#watch(result.transactionHash, read);
    } else bazaar = await this.#put(read);
    return { ...result, extensionResponses: { [BAZAAR]: bazaar } };
  }

  /** The entry a payment makes, or why it makes none; undefined when it declares no discovery. */
  #read(request: PaymentRequest, payer: string): Accepted | BazaarResponse | undefined {
    if (request.x402Version !== 2) return undefined;
    const found = discover(request.resource, request.extensions);
    if (!found) return undefined;
    if (!found.ok) return rejected(found.reason);
    return { entry: this.#entryOf(found.discovered, request, payer), notes: found.notes };
  }

  #entryOf(discovered: Discovered, request: PaymentRequest, payer: string): CatalogueEntry {
    const r = request.requirements;
    const accepted = {
      scheme: r.scheme,
      network: r.network,
      amount: r.amount,
      asset: r.asset,
      payTo: r.payTo,
      ...(r.maxTimeoutSeconds !== undefined ? { maxTimeoutSeconds: r.maxTimeoutSeconds } : {}),
      ...(r.extra ? { extra: r.extra } : {}),
    };
    return {
      ...discovered,
      key: catalogueKey(discovered.resource, discovered.toolName),
      x402Version: 2,
      accepts: [accepted],
      payTo: r.payTo,
      payer,
      lastUpdated: this.#now(),
    };
  }

  async #put({ entry, notes }: Accepted): Promise<BazaarResponse> {
    try {
      const done = await this.catalogue.put({ ...entry, lastUpdated: this.#now() }, this.bounds);
      if ("refused" in done) return rejected(`not catalogued: ${done.refused}`);
      return notes.length > 0
        ? { status: "success", reason: clip(notes.join("; ")) }
        : { status: "success" };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return rejected(`the catalogue could not be written (${why}); a later payment adds it`);
    }
  }

  #watch(transaction: string, accepted: Accepted): BazaarResponse {
    if (this.#watched.size >= WATCHED && !this.#watched.has(transaction)) {
      return rejected(
        `${WATCHED} settles answered submitted are already waiting to be catalogued; settle with waitUntil confirmed`,
      );
    }
    this.#watched.set(transaction, { ...accepted, until: this.#now() + WATCH_MS });
    this.#timer ??= setTimeout(() => void this.#follow(), WATCH_EVERY_MS);
    this.#timer.unref?.();
    return processing(accepted.notes, "catalogued once its transaction lands");
  }

  /** One look at each watched settle: catalogued when it landed, forgotten when it cannot. */
  async #follow(): Promise<void> {
    for (const [transaction, watched] of [...this.#watched]) {
      const state = await Promise.resolve(this.store.findByTransaction(transaction)).then(
        (entry) => entry?.state,
        () => undefined,
      );
      const landed = state === "answered" || state === "landed";
      if (landed) await this.#put(watched);
      if (landed || state === "failed" || state === "dropped" || this.#now() > watched.until) {
        this.#watched.delete(transaction);
      }
    }
    this.#timer =
      this.#watched.size > 0 ? setTimeout(() => void this.#follow(), WATCH_EVERY_MS) : undefined;
    this.#timer?.unref?.();
  }

  /** Settles answered submitted still waiting to be catalogued (tests, status). */
  get watching(): number {
    return this.#watched.size;
  }
}

/** Longest reason sent: a reason quoting a buyer's keys must not pass the seller's header limit. */
const REASON_LIMIT = 600;
const clip = (text: string) =>
  text.length > REASON_LIMIT ? `${text.slice(0, REASON_LIMIT - 1)}…` : text;

const rejected = (rejectedReason: string): BazaarResponse => ({
  status: "rejected",
  rejectedReason: clip(rejectedReason),
});

function processing(notes: readonly string[], what: string): BazaarResponse {
  return { status: "processing", reason: clip([what, ...notes].join("; ")) };
}

const OPTIONAL = ["description", "mimeType", "serviceName", "tags", "iconUrl", "toolName"] as const;

/** An entry as /discovery answers it: the official DiscoveryResource shape. */
export function discoveryResource(entry: CatalogueEntry): Record<string, unknown> {
  return {
    resource: entry.resource,
    type: entry.type,
    x402Version: entry.x402Version,
    accepts: entry.accepts,
    lastUpdated: new Date(entry.lastUpdated).toISOString(),
    ...Object.fromEntries(
      OPTIONAL.flatMap((key) => (entry[key] === undefined ? [] : [[key, entry[key]]])),
    ),
    extensions: {
      [BAZAAR]: entry.bazaar,
      ...Object.fromEntries(entry.otherExtensions.map((key) => [key, {}])),
    },
  };
}
