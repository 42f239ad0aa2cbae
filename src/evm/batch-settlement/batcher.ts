/** Claims batched into one `multicall`, each simulated alone first: a bad claim is refused alone.
 * Should the batch still revert, those now failing alone are refused and charged, the rest resent. */
import { concatHex, type Hex, keccak256, type TransactionReceipt } from "viem";
import { setNewest } from "../../core/newest.js";
import { inProgress, type SettleSteps, settleInTurn } from "../../core/settle-loop.js";
import type { Failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { firstLine } from "../../protocol/words.js";
import { chargeWaste } from "../chain/gas-at-risk.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { type Action, refused, type Sent, sendAction } from "../send-action.js";
import { channelIdOf } from "./channel.js";
import { claimCall, claimKey, learnClaims, rowsThatMove } from "./claim-call.js";
import { pickUpClaim } from "./claim-pickup.js";
import { SETTLEMENT_ADDRESS, settlementCall } from "./constants.js";
import { type ChannelConfig, claimSchema, parsePayload, type VoucherClaim } from "./payload.js";
import { wouldRevert } from "./reasons.js";
import { BATCH_GAS, BATCH_OWN, type ClaimBatchPolicy } from "./settings.js";

/** One claim request: its rows, and the receiver authorizer's signature unless we sign. */
interface ClaimRequest {
  readonly rows: readonly VoucherClaim[];
  readonly signature?: Hex | undefined;
  /** Its request: credited with its builder codes when sent alone (a batch credits ours alone). */
  readonly payment?: PaymentRequest | undefined;
}

/** A claim request signed, encoded and simulated: what it sends alone, or brings to a batch. */
interface Ready {
  readonly request: ClaimRequest;
  readonly key: string;
  /** The key of the request as asked, before rows that move nothing were left out. */
  readonly askedKey: string;
  readonly data: Hex;
}

interface Waiting extends Ready {
  readonly waitUntil: Exclude<WaitUntil, "simulated">;
  readonly resolve: (sent: Sent) => void;
}

const claimReverts = (detail: string | undefined) => wouldRevert("claim", detail);

/** A claim: what vouchers entitle the receiver to, for one or many channels, sent batched. */
export async function settleClaim(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parsePayload(request, claimSchema);
  if (!parsed.ok) return parsed;
  const { claims, claimAuthorizerSignature } = parsed.value;
  const asked = { rows: claims, signature: claimAuthorizerSignature, payment: request };
  const sent = await batcherOf(ctx).claim(ctx, asked, waitUntil);
  if (!sent.ok) return sent.result;
  learnClaims(ctx, claims);
  return { ok: true, payer: "", transactionHash: sent.hash };
}

/** The batcher of chain `chainId` for this facilitator. */
function batcherOf(ctx: EvmContext): ClaimBatcher {
  return ctx.kept(
    `batch-settlement:claims:${ctx.chainId}`,
    () => new ClaimBatcher(ctx.own(BATCH_OWN).claimBatch),
  );
}

class ClaimBatcher {
  #queue: Waiting[] = [];
  #rows = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Requests answered lately, by key: a retry gets the same transaction, not a second one. */
  readonly #answered = new Map<string, Hex>();
  /** Channels whose claims sank a batch, until when: claimed alone, so a revert is their own. */
  readonly #suspects = new Map<string, number>();

  constructor(private readonly policy: ClaimBatchPolicy) {}

  /** Claims `request`'s rows, in a batch when others come along in time. */
  async claim(ctx: EvmContext, asked: ClaimRequest, waitUntil: WaitUntil): Promise<Sent> {
    // A claim asked again is answered before its rows are read (they move nothing once it landed).
    const askedKey = claimKey(ctx, asked.rows);
    const answered = this.#answered.get(askedKey);
    if (answered) return { ok: true, hash: answered };
    // One process at a time, on any replica, claims these rows (the settle loop).
    const steps: SettleSteps<Ready, Sent> = {
      key: askedKey,
      busy: () => refused(inProgress()),
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
    const refuse = (failure: Failure) => ({ ok: false as const, result: refused(failure) });
    for (const row of asked.rows) {
      const throttled = ctx.throttle.refusal(ctx.chainId, row.voucher.channel.payer);
      if (throttled) return refuse(throttled);
    }
    const moving = await rowsThatMove(ctx, asked.rows);
    if (!moving.ok) return refuse(moving.failure);
    // Our own signature covers only the rows that move; a seller's covers them all.
    const request = asked.signature ? asked : { rows: moving.rows, payment: asked.payment };
    const call = await claimCall(ctx, request.rows, request.signature);
    if (!call.ok) return refuse(call.failure);
    const before = this.#answered.get(call.key);
    if (before) return { ok: false, result: { ok: true, hash: before } };
    const alone = await simulateAlone(ctx, call.data);
    if (alone) return refuse(alone);
    return { ok: true, value: { request, key: call.key, askedKey, data: call.data } };
  }

  /** Alone, or with the claims that come along in time. */
  #send(ctx: EvmContext, ready: Ready, waitUntil: Exclude<WaitUntil, "simulated">): Promise<Sent> {
    const rows = ready.request.rows;
    // A channel that once sank a batch is claimed on its own: its revert is its own to pay.
    const now = Date.now();
    const suspect = rows.some((row) => (this.#suspects.get(idOf(ctx, row)) ?? 0) > now);
    if (this.policy.maxWaitMs <= 0 || suspect) return this.#sendAlone(ctx, ready, waitUntil);
    return new Promise<Sent>((resolve) => {
      this.#queue.push({ ...ready, waitUntil, resolve });
      this.#rows += rows.length;
      if (this.#rows >= this.policy.maxRows) void this.#flush(ctx);
      else this.#timer ??= setTimeout(() => void this.#flush(ctx), this.policy.maxWaitMs);
    });
  }

  async #sendAlone(ctx: EvmContext, ready: Ready, waitUntil: WaitUntil): Promise<Sent> {
    const { key, askedKey, data } = ready;
    // The claim as asked is held already; the rows that move may make another.
    const held = key === askedKey ? { claimed: true } : { members: [askedKey] };
    const more = { payment: ready.request.payment, ...held };
    const sent = await sendClaims(ctx, [ready], key, data, waitUntil, more);
    if (sent.ok && waitUntil !== "simulated") this.#remember(ready, sent.hash);
    if (!sent.ok && sent.reverted?.mined) this.#charge(ctx, [ready], sent.reverted.receipt);
    return sent;
  }

  /** Rows that made a transaction of ours revert: their payers pay for it, in the throttle. */
  #charge(ctx: EvmContext, culprits: readonly Ready[], receipt: TransactionReceipt): void {
    chargeWaste(ctx, chargesOf(culprits), receipt);
    const until = Date.now() + SUSPECT_MS;
    for (const { request } of culprits) {
      for (const row of request.rows) setNewest(this.#suspects, idOf(ctx, row), until, 10_000);
    }
  }

  async #flush(ctx: EvmContext): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue;
    this.#queue = [];
    this.#rows = 0;
    if (batch.length === 0) return;
    const sent = await this.#together(ctx, batch);
    if (batch.length === 1 || sent.ok || !sent.reverted) {
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
    for (const [i, w] of batch.entries()) if (verdicts[i]) w.resolve(refused(verdicts[i]));
    if (rest.length === 0) return;
    if (sinking.length === 0) {
      // Nobody to blame: all are charged and told, and claimed alone from now on.
      if (receipt) this.#charge(ctx, rest, receipt);
      for (const w of rest) w.resolve(sent);
      return;
    }
    // Once more, together, without the rows that failed; never one by one.
    const again = await this.#together(ctx, rest);
    for (const w of rest) w.resolve(again);
  }

  /** The waiting requests as one transaction. */
  #together(ctx: EvmContext, waiting: readonly Waiting[]): Promise<Sent> {
    const [first] = waiting as [Waiting];
    return waiting.length === 1
      ? this.#sendAlone(ctx, first, first.waitUntil)
      : this.#sendBatch(ctx, waiting);
  }

  async #sendBatch(ctx: EvmContext, batch: readonly Waiting[]): Promise<Sent> {
    let sent: Sent;
    try {
      const calls = await batchCalls(ctx, batch);
      const data =
        calls.length === 1 ? (calls[0] as Hex) : settlementCall("multicall", [calls]).data;
      const keys = batch.map((w) => keccak256(new TextEncoder().encode(w.key)));
      const key = `batch-claims:${ctx.chainId}:${keccak256(concatHex(keys))}`;
      // The strongest wait any caller asked for: each is answered when the batch gets there.
      const waitUntil = batch.some((w) => w.waitUntil === "confirmed") ? "confirmed" : "submitted";
      sent = await sendClaims(ctx, batch, key, data, waitUntil, {
        members: [...new Set(batch.map((w) => w.askedKey))],
      });
    } catch (error) {
      return refused(chainFailure(error, "batching claims"));
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

/** How long a channel that sank a batch is claimed alone. */
const SUSPECT_MS = 10 * 60_000;

const idOf = (ctx: EvmContext, row: VoucherClaim) => channelIdOf(row.voucher.channel, ctx.chainId);

/** The payers of a claim transaction's rows: whose doing its waste is. */
const chargesOf = (claims: readonly Ready[]) =>
  claims.flatMap((c) => c.request.rows.map(({ voucher: { channel } }) => channelCharge(channel)));
const channelCharge = ({ payer, token }: ChannelConfig) => ({ payer, asset: token });

/** Sends `claims` as one transaction; the batcher charges a revert to the rows that sink it. */
function sendClaims(
  ctx: EvmContext,
  claims: readonly Ready[],
  key: string,
  data: Hex,
  waitUntil: WaitUntil,
  more: Pick<Action, "payment" | "claimed" | "members">,
): Promise<Sent> {
  const rows = claims.reduce((n, c) => n + c.request.rows.length, 0);
  const asset = claims[0]?.request.rows[0]?.voucher.channel.token ?? SETTLEMENT_ADDRESS;
  const gas = { use: BATCH_GAS.claim, rows: { count: rows, each: BATCH_GAS.claimRow }, asset };
  const call = { to: SETTLEMENT_ADDRESS, data };
  const charges = { name: "claim", chargeTo: chargesOf(claims), chargedByCaller: true };
  return sendAction(ctx, { key, call, gas, reverts: claimReverts, ...charges, ...more }, waitUntil);
}

/** Why the claim would revert alone now; after a mined revert, as that one ran (its gas price). */
async function simulateAlone(
  ctx: EvmContext,
  data: Hex,
  like?: TransactionReceipt,
): Promise<Failure | undefined> {
  const sentAs = like ? { account: like.from, gasPrice: like.effectiveGasPrice } : {};
  try {
    await ctx.client.call({ to: SETTLEMENT_ADDRESS, data, ...sentAs });
    return undefined;
  } catch (error) {
    const failure = chainFailure(error, "simulating the claim");
    if (failure.code === "chain_unavailable") return failure;
    return claimReverts(firstLine(error));
  }
}

/** The batch's calls: the rows we sign in one (a channel's highest total), then sellers' own. */
async function batchCalls(ctx: EvmContext, batch: readonly Waiting[]): Promise<Hex[]> {
  const merged = new Map<string, VoucherClaim>();
  const calls: Hex[] = [];
  for (const { request, data } of batch) {
    if (request.signature) {
      calls.push(data);
      continue;
    }
    for (const row of request.rows) {
      const known = merged.get(idOf(ctx, row));
      if (!known || row.totalClaimed > known.totalClaimed) merged.set(idOf(ctx, row), row);
    }
  }
  if (merged.size > 0) {
    const rows = [...merged.values()];
    const call = await claimCall(ctx, rows, undefined);
    if (!call.ok) throw new Error(call.failure.message);
    calls.unshift(call.data);
  }
  return calls;
}
