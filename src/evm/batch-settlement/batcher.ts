/**
 * Claims batched across channels and receivers: claim requests that arrive within `maxWaitMs` of
 * the first (or until `maxRows` rows) go out as one transaction. Rows we sign (our receiver
 * authorizer's channels) merge into one `claimWithSignature` under one signature; rows a seller
 * signed keep their own call; several calls ride one `multicall`. A claim that would move nothing
 * is refused before anything is signed (claim-rows.ts), and each request is simulated alone first,
 * so one bad claim is refused on its own and never sinks the batch. Should the batch still revert
 * (the chain changed in between), the requests that now fail alone are refused and charged to
 * their payers, and the rest go out once more, together; nothing is sent one by one, and a batch
 * whose culprit cannot be found is not sent again. Every caller gets the batch's transaction.
 */
import { concatHex, encodeFunctionData, type Hex, keccak256, type TransactionReceipt } from "viem";
import { setNewest } from "../../core/newest.js";
import { inProgress, type SettleSteps, settleInTurn } from "../../core/settle-loop.js";
import type { Failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { type Sent, sendAction } from "../send-action.js";
import { channelIdOf } from "./channel.js";
import { claimCall, claimKey, claimSignature } from "./claim-call.js";
import { pickUpClaim } from "./claim-pickup.js";
import { rowsThatMove } from "./claim-rows.js";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "./constants.js";
import type { VoucherClaim } from "./payload.js";
import { rejected } from "./reasons.js";
import { BATCH_GAS, BATCH_OWN, type ClaimBatchPolicy } from "./settings.js";

/** One claim request: its rows, and the receiver authorizer's signature unless we sign. */
export interface ClaimRequest {
  readonly rows: readonly VoucherClaim[];
  readonly signature?: Hex | undefined;
  /**
   * The request it came in: a claim sent alone credits its builder codes with ours; a batch,
   * which carries several sellers' claims, credits ours alone (ERC-8021 names one app).
   */
  readonly payment?: PaymentRequest | undefined;
}

/** A claim request signed, encoded and simulated: what it sends alone, or brings to a batch. */
interface Ready {
  readonly request: ClaimRequest;
  readonly key: string;
  /** The key of the request as asked, before rows that move nothing were left out. */
  readonly askedKey: string;
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
  return ctx.kept(
    `batch-settlement:claims:${ctx.chainId}`,
    () => new ClaimBatcher(ctx.own(BATCH_OWN).claimBatch),
  );
}

export class ClaimBatcher {
  readonly #policy: ClaimBatchPolicy;
  #queue: Waiting[] = [];
  #rows = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Requests answered lately, by key: a retry gets the same transaction, not a second one. */
  readonly #answered = new Map<string, Hex>();
  readonly #suspects = new Suspects();

  constructor(policy: ClaimBatchPolicy) {
    this.#policy = policy;
  }

  /** Claims `request`'s rows, in a batch when others come along in time. */
  async claim(ctx: EvmContext, asked: ClaimRequest, waitUntil: WaitUntil): Promise<Sent> {
    // The same claim asked again is answered with its transaction, before its rows are read
    // (they move nothing any more once it landed).
    const askedKey = claimKey(ctx, asked.rows);
    const answered = this.#answered.get(askedKey);
    if (answered) return { ok: true, hash: answered };
    // One process at a time, on any replica, claims these rows, through the settle loop: the
    // store says whether a transaction of them stands already (sent here or elsewhere, alive or
    // dead), and a dry run reads nothing of it and sends nothing.
    const steps: SettleSteps<Ready, Sent> = {
      key: askedKey,
      busy: () => ({ ok: false, result: { ok: false, failure: inProgress() } }),
      pickUp: async (entry, _waitUntil, may) => (may ? pickUpClaim(ctx, entry, may) : undefined),
      prepare: () => this.#prepare(ctx, asked, askedKey),
      simulate: (ready) => this.#sendAlone(ctx, ready, "simulated"),
      hold: async () => undefined,
      send: (ready, wait) => this.#send(ctx, ready, wait),
    };
    const sent = await settleInTurn(ctx, steps, waitUntil);
    if (sent.ok && waitUntil !== "simulated")
      setNewest(this.#answered, askedKey, sent.hash, 10_000);
    return sent;
  }

  /** Checked, signed and simulated alone: a claim that cannot go through is refused now. */
  async #prepare(
    ctx: EvmContext,
    asked: ClaimRequest,
    askedKey: string,
  ): Promise<{ ok: true; value: Ready } | { ok: false; result: Sent }> {
    const refuse = (failure: Failure) => ({
      ok: false as const,
      result: { ok: false as const, result: { ok: false as const, failure } },
    });
    const checked = await this.#check(ctx, asked);
    if (!checked.ok) return refuse(checked.failure);
    const request = checked.request;
    const signed = await claimSignature(ctx, request.rows, request.signature);
    if (!signed.ok) return refuse(signed.failure);
    const { key, data } = claimCall(ctx, request.rows, signed.signature);
    const before = this.#answered.get(key);
    if (before) return { ok: false, result: { ok: true, hash: before } };
    // Alone first: a claim that cannot go through is refused now, and never joins a batch.
    const alone = await simulateAlone(ctx, data);
    if (alone) return refuse(alone);
    return { ok: true, value: { request, key, askedKey, signature: signed.signature, data } };
  }

  /** Alone, or with the claims that come along in time. */
  #send(ctx: EvmContext, ready: Ready, waitUntil: Exclude<WaitUntil, "simulated">): Promise<Sent> {
    const request = ready.request;
    // A channel that once sank a batch is claimed on its own: its revert is its own to pay.
    const suspect = this.#suspects.isSuspect(ctx, request.rows);
    if (this.#policy.maxWaitMs <= 0 || suspect) return this.#sendAlone(ctx, ready, waitUntil);
    return new Promise<Sent>((resolve) => {
      this.#queue.push({ ...ready, waitUntil, resolve });
      this.#rows += request.rows.length;
      if (this.#rows >= this.#policy.maxRows) void this.#flush(ctx);
      else this.#timer ??= setTimeout(() => void this.#flush(ctx), this.#policy.maxWaitMs);
    });
  }

  /** A claim that moves nothing, or whose channel's payer keeps making claims revert, is refused. */
  async #check(
    ctx: EvmContext,
    request: ClaimRequest,
  ): Promise<{ ok: true; request: ClaimRequest } | { ok: false; failure: Failure }> {
    for (const row of request.rows) {
      const throttled = ctx.throttle.refusal(ctx.chainId, row.voucher.channel.payer);
      if (throttled) return { ok: false, failure: throttled };
    }
    const moving = await rowsThatMove(ctx, request.rows);
    if (!moving.ok) return moving;
    // Our own signature covers only what we sign: the rows that move. A seller's covers them all.
    return {
      ok: true,
      request: request.signature ? request : { rows: moving.rows, payment: request.payment },
    };
  }

  async #sendAlone(ctx: EvmContext, ready: Ready, waitUntil: WaitUntil): Promise<Sent> {
    const { request, key, askedKey, data } = ready;
    const sent = await sendAction(
      ctx,
      {
        key,
        call: { to: SETTLEMENT_ADDRESS, data },
        gas: {
          use: BATCH_GAS.claim,
          rows: { count: request.rows.length, each: BATCH_GAS.claimRow },
          asset: tokenOf(request),
        },
        reverts: claimReverts,
        ...claimCharges([ready]),
        payment: ready.request.payment,
        // The claim as asked is held already; the rows that move may make another.
        ...(key === askedKey ? { claimed: true } : { members: [askedKey] }),
      },
      waitUntil,
    );
    if (sent.ok && waitUntil !== "simulated") this.#remember(ready, sent.hash);
    if (!sent.ok && sent.reverted?.mined) {
      this.#charge(ctx, [ready], sent.reverted.receipt);
    }
    return sent;
  }

  /** Claim rows that made a transaction of ours revert: their payers pay for it, in the throttle. */
  #charge(ctx: EvmContext, culprits: readonly Ready[], receipt: TransactionReceipt): void {
    const rows = culprits.flatMap((c) => c.request.rows);
    const share = receipt.gasUsed / BigInt(Math.max(1, rows.length));
    for (const row of rows) {
      const { payer, token } = row.voucher.channel;
      ctx.gasAtRisk.charge(ctx.chainId, { payer, asset: token, gas: share, cause: "reverted" });
    }
    this.#suspects.add(ctx, rows);
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
    const sent = await this.#sendBatch(ctx, batch);
    if (sent.ok || !sent.reverted) {
      // Sent, or not for a reason of its rows (fee cap, node, pending): each caller is told so.
      for (const w of batch) w.resolve(sent);
      return;
    }
    // Something changed between the simulations and the batch: find who sinks it.
    const receipt = sent.reverted.mined ? sent.reverted.receipt : undefined;
    const verdicts = await Promise.all(batch.map((w) => simulateAlone(ctx, w.data, receipt)));
    const sinking = batch.filter((_, i) => verdicts[i] !== undefined);
    const rest = batch.filter((_, i) => verdicts[i] === undefined);
    if (receipt && sinking.length > 0) this.#charge(ctx, sinking, receipt);
    batch.forEach((w, i) => {
      const failure = verdicts[i];
      if (failure) w.resolve({ ok: false, result: { ok: false, failure } });
    });
    if (rest.length === 0) return;
    if (sinking.length === 0) {
      // Nobody to blame, and nothing to gain from sending the same again: the gas is charged to
      // them all, each is told, and their channels are claimed one by one from now on, where a
      // revert names its own payer.
      if (receipt) this.#charge(ctx, rest, receipt);
      for (const w of rest) w.resolve(sent);
      return;
    }
    // Once more, together, without the rows that failed; never one by one.
    const again =
      rest.length === 1
        ? await this.#sendAlone(ctx, rest[0] as Waiting, (rest[0] as Waiting).waitUntil)
        : await this.#sendBatch(ctx, rest);
    for (const w of rest) w.resolve(again);
  }

  /** Sends the waiting requests as one transaction; each caller is answered with it. */
  async #sendBatch(ctx: EvmContext, batch: readonly Waiting[]): Promise<Sent> {
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
          gas: {
            use: BATCH_GAS.claim,
            rows: { count: rows, each: BATCH_GAS.claimRow },
            asset: tokenOf((batch[0] as Waiting).request),
          },
          reverts: claimReverts,
          ...claimCharges(batch),
          members: [...new Set(batch.map((w) => w.askedKey))],
        },
        waitUntil,
      );
    } catch (error) {
      return { ok: false, result: { ok: false, failure: chainFailure(error, "batching claims") } };
    }
    if (sent.ok) for (const w of batch) this.#remember(w, sent.hash);
    return sent;
  }

  #remember(ready: Ready, hash: Hex): void {
    for (const key of new Set([ready.key, ready.askedKey])) {
      setNewest(this.#answered, key, hash, 10_000);
    }
  }
}

/**
 * Why the claim would revert on its own now, if it would. After a mined revert it runs as that
 * transaction ran (our account, its gas price), so a payer's code that answers differently when
 * gas is paid for is caught too.
 */
async function simulateAlone(
  ctx: EvmContext,
  data: Hex,
  like?: TransactionReceipt,
): Promise<Failure | undefined> {
  const error = await ctx.client
    .call({
      to: SETTLEMENT_ADDRESS,
      data,
      ...(like ? { account: like.from, gasPrice: like.effectiveGasPrice } : {}),
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  if (error === undefined) return undefined;
  const failure = chainFailure(error, "simulating the claim");
  if (failure.code === "chain_unavailable") return failure;
  return claimReverts(String((error as Error)?.message ?? error).split("\n")[0]);
}

/** Channels whose claims sank a batch: claimed alone for a while, so a revert is their own. */
class Suspects {
  readonly #until = new Map<string, number>();
  static readonly WINDOW_MS = 10 * 60_000;

  add(ctx: EvmContext, rows: readonly VoucherClaim[], now = Date.now()): void {
    for (const row of rows) {
      const id = channelIdOf(row.voucher.channel, ctx.chainId);
      setNewest(this.#until, id, now + Suspects.WINDOW_MS, 10_000);
    }
  }

  isSuspect(ctx: EvmContext, rows: readonly VoucherClaim[], now = Date.now()): boolean {
    return rows.some(
      (row) => (this.#until.get(channelIdOf(row.voucher.channel, ctx.chainId)) ?? 0) > now,
    );
  }
}

/**
 * Whose doing a claim transaction's waste is: the payers of its rows. A revert seen here is
 * charged here, to the rows that sink it; the store keeps them all for a reconciler that sees it.
 */
const claimCharges = (claims: readonly Ready[]) => ({
  name: "claim",
  chargeTo: claims.flatMap((c) =>
    c.request.rows.map((row) => ({
      payer: row.voucher.channel.payer,
      asset: row.voucher.channel.token,
    })),
  ),
  chargedByCaller: true,
});

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
