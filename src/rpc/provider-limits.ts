/** What a hosted provider refuses that a node would not (a batch too big, a request over its rate):
 * nothing was forwarded, so it is split or waited for and sent again. Kept per URL for doctor. */
import { HttpRequestError, type Transport } from "viem";

/** viem's default batch size: the most calls a batch has until a provider refuses one. */
export const DEFAULT_BATCH_LIMIT = 1000;
/** The longest one wait lasts, whatever Retry-After asks (a minute would outlast the settle). */
export const MAX_RATE_WAIT_MS = 2_000;
/** How long one call may spend waiting out a provider's 429s before it fails. */
export const RATE_WAIT_BUDGET_MS = 6_000;
/** The same when another URL of the chain can take the call instead (fallback in rpc.ts). */
export const FAILOVER_WAIT_BUDGET_MS = 1_000;
/** The first wait when the provider does not say how long (doubled each time). */
const FIRST_BACKOFF_MS = 250;

/** Over-rate codes (Infura, Alchemy, QuickNode); Solana's mean other things unless words say so. */
const RATE_LIMIT_CODES = new Set([-32005, 429, -32007]);
const RATE_LIMIT_WORDS = /rate|limit|too many|exceed|capacity/i;

export const isRateLimitAnswer = (error: { code: number; message: string }) =>
  RATE_LIMIT_CODES.has(error.code) && RATE_LIMIT_WORDS.test(error.message);

/** The provider asked us to wait (429, or a rate error in a 200): read as a refused connection. */
export class RateLimitedError extends HttpRequestError {
  /** How long the provider asked us to wait (Retry-After), when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(
    args: ConstructorParameters<typeof HttpRequestError>[0] & {
      details: string;
      retryAfterMs?: number | undefined;
    },
  ) {
    super(args);
    this.name = "RateLimitedError";
    this.shortMessage = `the RPC provider rate-limited the request (${args.status === 429 ? "HTTP 429" : args.details}) and did not pass it on`;
    this.retryAfterMs = args.retryAfterMs;
  }
}

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** What one RPC URL has refused, and what we make of it. */
export interface ProviderState {
  /** Most calls per batch request: configured, then lowered by each refusal. */
  batchLimit: number;
  /** Batches refused whole for their size. */
  refusedBatches: number;
  /** Calls sent, and calls the provider answered "wait" (each attempt counted). */
  calls: number;
  rateLimited: number;
  /** Until then, the provider asked us to wait (epoch ms). */
  restUntil: number;
  /** When its current run of rate-limited answers began (undefined: it last answered). */
  limitedSince: number | undefined;
}

/** Keyed by the URL as configured (never printed: it may hold an API key). */
const states = new Map<string, ProviderState>();

/** The state of `url`, made when first asked; a configured batch limit lowers what is known. */
export function providerState(url: string, batchLimit?: number): ProviderState {
  const state = states.get(url) ?? {
    batchLimit: DEFAULT_BATCH_LIMIT,
    refusedBatches: 0,
    calls: 0,
    rateLimited: 0,
    restUntil: 0,
    limitedSince: undefined,
  };
  states.set(url, state);
  if (batchLimit !== undefined) state.batchLimit = Math.min(state.batchLimit, batchLimit);
  return state;
}

/** A batch of `size` calls was refused whole: send at most half as many at a time from now. */
export function learnBatchLimit(state: ProviderState, size: number): number {
  state.refusedBatches++;
  state.batchLimit = Math.max(1, Math.min(state.batchLimit, Math.ceil(size / 2)));
  return state.batchLimit;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `attempt`, waiting out the provider's rate limit; throws once `budgetMs` would be spent. */
export async function withinRateLimit<T>(
  state: ProviderState,
  budgetMs: number,
  request: { body: Record<string, unknown>; url: string },
  attempt: () => Promise<T | RateLimitedError>,
): Promise<T> {
  const started = Date.now();
  for (let tries = 0; ; tries++) {
    const rest = state.restUntil - Date.now();
    if (rest > 0) {
      if (Date.now() - started + rest > budgetMs) {
        throw new RateLimitedError({
          ...request,
          details: "it asked us to wait longer than a call may",
        });
      }
      await sleep(rest);
    }
    state.calls++;
    const outcome = await attempt();
    if (!(outcome instanceof RateLimitedError)) {
      state.limitedSince = undefined;
      return outcome;
    }
    const now = Date.now();
    state.rateLimited++;
    state.limitedSince ??= now;
    const backoff = FIRST_BACKOFF_MS * 2 ** tries * (0.8 + Math.random() * 0.4);
    const wait = Math.min(outcome.retryAfterMs ?? backoff, MAX_RATE_WAIT_MS);
    state.restUntil = Math.max(state.restUntil, now + wait);
    if (now - started + wait > budgetMs || now - state.limitedSince > budgetMs) throw outcome;
  }
}

/** `transport` with each request made through `around` (`send` makes it as it would be). */
export function aroundRequests(
  transport: Transport,
  around: (method: string, send: () => Promise<unknown>) => Promise<unknown>,
): Transport {
  return (params) => {
    const built = transport(params);
    const request = ((args, options) =>
      around(args.method, () => built.request(args, options))) as typeof built.request;
    return { ...built, request };
  };
}

/** What `url` refused so far (doctor names it), or undefined when nothing. */
export function limitsMet(
  url: string,
): Pick<ProviderState, "rateLimited" | "calls" | "refusedBatches" | "batchLimit"> | undefined {
  const state = states.get(url);
  if (!state || (state.rateLimited === 0 && state.refusedBatches === 0)) return undefined;
  const { rateLimited, calls, refusedBatches, batchLimit } = state;
  return { rateLimited, calls, refusedBatches, batchLimit };
}
