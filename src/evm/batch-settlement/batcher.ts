/**
 * Claims batched across channels and receivers: claim requests that arrive within `maxWaitMs` of
 * the first (or until `maxRows` rows) go out as one transaction. Rows we sign (our receiver
 * authorizer's channels) merge into one `claimWithSignature` under one signature; rows a seller
 * signed keep their own call; several calls ride one `multicall`. Each request is simulated alone
 * first, so one bad claim is refused on its own and never sinks the batch; should the batch still
 * not go through, each request is sent by itself. Every caller gets the batch's transaction.
 */
import { concatHex, encodeFunctionData, type Hex, keccak256 } from "viem";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { channelIdOf } from "./channel.js";
import { claimCall, claimSignature } from "./claim-call.js";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "./constants.js";
import type { VoucherClaim } from "./payload.js";
import { rejected } from "./reasons.js";
import { type Sent, sendAction } from "./send.js";

/** How claims are batched: up to `maxRows` rows, waiting at most `maxWaitMs` for more. */
export interface ClaimBatchPolicy {
  readonly maxRows: number;
  readonly maxWaitMs: number;
}

export const DEFAULT_CLAIM_BATCH: ClaimBatchPolicy = { maxRows: 100, maxWaitMs: 500 };

/** One claim request: its rows, and the receiver authorizer's signature unless we sign. */
export interface ClaimRequest {
  readonly rows: readonly VoucherClaim[];
  readonly signature?: Hex | undefined;
}

/** A claim request signed, encoded and simulated: what it sends alone, or brings to a batch. */
interface Ready {
  readonly request: ClaimRequest;
  readonly key: string;
  /** The receiver authorizer's signature: the seller's, or the one we made. */
  readonly signature: Hex;
  readonly data: Hex;
}

interface Waiting extends Ready {
  readonly waitUntil: Exclude<WaitUntil, "simulated">;
  readonly resolve: (sent: Sent) => void;
}

const claimReverts = (detail: string | undefined) =>
  rejected(
    "simulation_failed",
    "claim_simulation_failed",
    `the claim would revert${detail ? `: ${detail}` : ""}`,
  );

/** The batcher of chain `chainId` for this facilitator. */
export function batcherOf(ctx: EvmContext): ClaimBatcher {
  return ctx.kept(`batch-settlement:claims:${ctx.chainId}`, () => new ClaimBatcher(ctx.claimBatch));
}

export class ClaimBatcher {
  readonly #policy: ClaimBatchPolicy;
  #queue: Waiting[] = [];
  #rows = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Requests answered lately, by key: a retry gets the same transaction, not a second one. */
  readonly #answered = new Map<string, Hex>();

  constructor(policy: ClaimBatchPolicy) {
    this.#policy = policy;
  }

  /** Claims `request`'s rows, in a batch when others come along in time. */
  async claim(ctx: EvmContext, request: ClaimRequest, waitUntil: WaitUntil): Promise<Sent> {
    const signed = await claimSignature(ctx, request.rows, request.signature);
    if (!signed.ok) return { ok: false, result: { ok: false, failure: signed.failure } };
    const { key, data } = claimCall(ctx, request.rows, signed.signature);
    const before = this.#answered.get(key);
    if (before) return { ok: true, hash: before };
    const ready: Ready = { request, key, signature: signed.signature, data };
    // Alone first: a claim that cannot go through is refused now, and never joins a batch.
    const alone = await ctx.client.call({ to: SETTLEMENT_ADDRESS, data }).then(
      () => undefined,
      (error: unknown) => error,
    );
    if (alone !== undefined) {
      const failure = chainFailure(alone, "simulating the claim");
      return {
        ok: false,
        result: {
          ok: false,
          failure:
            failure.code === "chain_unavailable"
              ? failure
              : claimReverts(String((alone as Error)?.message ?? alone).split("\n")[0]),
        },
      };
    }
    if (waitUntil === "simulated" || this.#policy.maxWaitMs <= 0) {
      return this.#sendAlone(ctx, ready, waitUntil);
    }
    return new Promise<Sent>((resolve) => {
      this.#queue.push({ ...ready, waitUntil, resolve });
      this.#rows += request.rows.length;
      if (this.#rows >= this.#policy.maxRows) void this.#flush(ctx);
      else this.#timer ??= setTimeout(() => void this.#flush(ctx), this.#policy.maxWaitMs);
    });
  }

  async #sendAlone(ctx: EvmContext, ready: Ready, waitUntil: WaitUntil): Promise<Sent> {
    const { request, key, data } = ready;
    const sent = await sendAction(
      ctx,
      {
        key,
        call: { to: SETTLEMENT_ADDRESS, data },
        gas: { use: "batchClaim", rows: request.rows.length, asset: tokenOf(request) },
        reverts: claimReverts,
      },
      waitUntil,
    );
    if (sent.ok && waitUntil !== "simulated") this.#remember(key, sent.hash);
    return sent;
  }

  async #flush(ctx: EvmContext): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue;
    this.#queue = [];
    this.#rows = 0;
    if (batch.length === 0) return;
    const first = batch[0] as Waiting;
    if (batch.length === 1) {
      first.resolve(await this.#sendAlone(ctx, first, first.waitUntil));
      return;
    }
    let sent: Sent;
    try {
      const calls = await batchCalls(ctx, batch);
      const data =
        calls.length === 1
          ? (calls[0] as Hex)
          : encodeFunctionData({ abi: SETTLEMENT_ABI, functionName: "multicall", args: [calls] });
      const rows = batch.reduce((n, w) => n + w.request.rows.length, 0);
      // The strongest wait any caller asked for: each is answered when the batch gets there.
      const waitUntil = batch.some((w) => w.waitUntil === "confirmed") ? "confirmed" : "submitted";
      sent = await sendAction(
        ctx,
        {
          key: `batch-claims:${ctx.chainId}:${keccak256(concatHex(batch.map((w) => keccak256(new TextEncoder().encode(w.key)))))}`,
          call: { to: SETTLEMENT_ADDRESS, data },
          gas: { use: "batchClaim", rows, asset: tokenOf(first.request) },
          reverts: claimReverts,
        },
        waitUntil,
      );
    } catch (error) {
      sent = { ok: false, result: { ok: false, failure: chainFailure(error, "batching claims") } };
    }
    if (sent.ok) {
      for (const w of batch) {
        this.#remember(w.key, sent.hash);
        w.resolve(sent);
      }
      return;
    }
    // Something changed between the simulations and the batch: each on its own, in turn.
    for (const w of batch) w.resolve(await this.#sendAlone(ctx, w, w.waitUntil));
  }

  #remember(key: string, hash: Hex): void {
    this.#answered.set(key, hash);
    if (this.#answered.size > 10_000) {
      const oldest = this.#answered.keys().next().value;
      if (oldest !== undefined) this.#answered.delete(oldest);
    }
  }
}

const tokenOf = (request: ClaimRequest) =>
  request.rows[0]?.voucher.channel.token ?? SETTLEMENT_ADDRESS;

async function ours(ctx: EvmContext, rows: readonly VoucherClaim[]): Promise<Hex> {
  const signed = await claimSignature(ctx, rows, undefined);
  if (!signed.ok) throw new Error(signed.failure.message);
  return signed.signature;
}

/**
 * The batch's calls: every row we sign in one claimWithSignature (for a channel claimed twice,
 * the higher total: the lower one would change nothing), then each seller-signed request's own.
 */
async function batchCalls(ctx: EvmContext, batch: readonly Waiting[]): Promise<Hex[]> {
  const merged = new Map<string, VoucherClaim>();
  const calls: Hex[] = [];
  for (const { request, data } of batch) {
    if (request.signature) {
      calls.push(data);
      continue;
    }
    for (const row of request.rows) {
      const id = channelIdOf(row.voucher.channel, ctx.chainId);
      const known = merged.get(id);
      if (!known || row.totalClaimed > known.totalClaimed) merged.set(id, row);
    }
  }
  if (merged.size > 0) {
    const rows = [...merged.values()];
    calls.unshift(claimCall(ctx, rows, await ours(ctx, rows)).data);
  }
  return calls;
}
