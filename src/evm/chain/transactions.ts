/** Sends one contract call and follows it, never throws: journaled before broadcast, every
 * answer then has its hash, stuck ones replaced at the same nonce, nothing above the fee cap. */
import { type Address, type Hex, keccak256, size } from "viem";
import { stageObserver } from "../../core/metrics.js";
import type { MaySend } from "../../core/settle-loop.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { isUnreachable, neverReachedNode } from "../../rpc/rpc.js";
import { bytesOfHex } from "./abi-words.js";
import type { ChainAccess } from "./access.js";
import { refusal } from "./broadcast.js";
import type { EvmEntry } from "./entry.js";
import { estimateFees, type Fees, overCap, repriced } from "./fees.js";
import {
  broadcastResending,
  follow,
  type Issued,
  mined,
  type Refused,
  refusalsSaid,
} from "./follow.js";
import { gasLimitFrom, reusedGasLimit } from "./gas.js";
import { type GasBounds, type GasNeed, gasBound, isOutOfGas, overGasBound } from "./gas-bounds.js";
import { keccak256Hex } from "./keccak.js";
import { newestBlockSeen } from "./local-node.js";
import {
  type CallOutcome,
  type ContractCall,
  failed,
  infrastructure,
  nodeSaid,
  pending,
  sentData,
  shortText,
  unjournaled,
} from "./outcome.js";
import { isRevert, revertReason } from "./revert.js";
import { SignerLane, type SignerPool } from "./signers.js";

export interface SendingAccess extends ChainAccess {
  /** Empty for verify-only use. */
  readonly signers: SignerPool;
  readonly gasBounds: GasBounds;
}

/** `action`: what a transaction without a Transfer of its own is sent for. */
type SettlementRecord = Pick<EvmEntry, "key" | "expect" | "action">;

type CallFields = Readonly<{ chainId: number; to: Address; data: Hex; gas: bigint; value: bigint }>;

export interface PreparedCall {
  readonly lane: SignerLane;
  readonly base: Fees & CallFields;
}

/** Nonces tried when the node says each is used. */
const SEND_ATTEMPTS = 5;

/** Picks the account and prices the call; estimating stops a revert, so `reuse` only if simulated. */
export async function prepareCall(
  ctx: SendingAccess,
  call: ContractCall,
  need: GasNeed,
  /** `signer`: the account the payer named; `fees`, `estimated`: read beside the caller's checks. */
  options: {
    readonly gasKey?: string | undefined;
    readonly reuse?: boolean | undefined;
    readonly estimated?: Promise<bigint> | undefined;
    readonly signer?: Address | undefined;
    readonly value?: bigint | undefined;
    readonly fees?: Promise<Fees> | undefined;
  } = {},
): Promise<PreparedCall | CallOutcome> {
  const named = options.signer ? ctx.signers.byAddress(options.signer) : undefined;
  const lane = named
    ? ((await named.admission(ctx)) ?? named)
    : options.signer
      ? undefined
      : await ctx.signers.admitting(ctx);
  if (lane && !(lane instanceof SignerLane)) return failed(lane);
  if (!lane) {
    const why = options.signer
      ? `the payment must be settled by ${options.signer}, which is not one of the configured settlement keys`
      : "no settlement key configured: set FACILITATOR_PRIVATE_KEY or pass --private-key-file";
    return failed(failure("settlement_failed", why, { status: 500 }));
  }
  const value = options.value ?? 0n;
  // A suffix's calldata (16 gas a byte) counts inside the bound: a payment never raises it.
  const suffixGas = call.suffix ? 16n * BigInt(size(call.suffix)) : 0n;
  const bound = gasBound(ctx.gasBounds, need);
  const data = sentData(call);
  lane.readAhead(ctx.client, ctx.chainId);
  const feesRead = options.fees ?? estimateFees(ctx);
  let gas: bigint;
  let fees: Fees;
  try {
    const reused = options.reuse ? reusedGasLimit(options.gasKey) : undefined;
    if (reused !== undefined) {
      gas = reused + suffixGas;
      fees = await feesRead;
    } else {
      // Without a limit, so a refusal can say what the call asked for.
      const [estimate, estimated] = await Promise.all([
        options.estimated ??
          ctx.client.estimateGas({ account: lane.address, to: call.to, data, value }),
        feesRead,
      ]);
      if (estimate > bound) return failed(overGasBound(ctx.chainId, need, bound, estimate));
      gas = gasLimitFrom(estimate, options.gasKey);
      fees = estimated;
    }
    if (gas > bound) gas = bound;
  } catch (error) {
    if (isOutOfGas(error)) return failed(overGasBound(ctx.chainId, need, bound, undefined));
    if (isRevert(error) && !isUnreachable(error)) return wouldRevert(error);
    if (isUnreachable(error)) lane.forget(ctx.chainId);
    return infrastructure(error, "preparing the settlement transaction");
  }
  const capped = overCap(ctx, gas, fees);
  if (capped) return failed(capped);
  const base = { ...fees, chainId: ctx.chainId, to: call.to, data, gas, value };
  return { lane, base };
}

/** `simulated`: sign at the next nonce and run it against the latest block; nothing is sent. */
export async function simulateCall(
  ctx: SendingAccess,
  prepared: PreparedCall,
): Promise<CallOutcome> {
  const { lane, base } = prepared;
  try {
    const nonce = await lane.pendingCount(ctx.client);
    const raw = await lane.account.signTransaction({ ...base, nonce });
    const { type: _type, chainId: _chainId, ...params } = base;
    await ctx.client.call({ ...params, nonce, account: lane.address, blockTag: "latest" });
    return { kind: "simulated", hash: keccak256(raw) };
  } catch (error) {
    if (isRevert(error) && !isUnreachable(error)) return wouldRevert(error);
    return infrastructure(error, "simulating the settlement transaction");
  }
}

/** Signs, journals, broadcasts and follows the prepared call to `waitUntil`. */
export async function sendCall(
  ctx: SendingAccess,
  prepared: PreparedCall,
  waitUntil: Exclude<WaitUntil, "simulated">,
  record: SettlementRecord,
  may: MaySend,
): Promise<CallOutcome> {
  const done = ctx.metrics?.settling(ctx.chainId, prepared.lane.address);
  const stages: StageTimes = {};
  try {
    return await sendAndFollow(ctx, prepared, waitUntil, record, stages, may);
  } finally {
    done?.();
    const observe = stageObserver(ctx.metrics, `eip155:${ctx.chainId}`);
    if (stages.journalMs !== undefined) observe?.("journal", stages.journalMs / 1000);
    if (stages.broadcastAt !== undefined) {
      observe?.("chain", (performance.now() - stages.broadcastAt) / 1000);
    }
  }
}

/** Journal time, and first broadcast (serve's metrics). */
type StageTimes = { journalMs?: number; broadcastAt?: number };

async function sendAndFollow(
  ctx: SendingAccess,
  prepared: PreparedCall,
  waitUntil: Exclude<WaitUntil, "simulated">,
  record: SettlementRecord,
  stages: StageTimes,
  may: MaySend,
): Promise<CallOutcome> {
  const { lane } = prepared;
  let { base } = prepared;
  let repricedOnce = false;
  let sent: Sent = { kind: "retry" };
  let sentAt: number | undefined;
  let sentAfterBlock: bigint | undefined;
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  const refused: Refused[] = [];
  for (
    let attempt = 0;
    attempt < SEND_ATTEMPTS && sent.kind === "retry" && Date.now() < deadline;
    attempt++
  ) {
    // The lane only hands out the nonce and signs; journal sync and broadcast run outside it (one
    // shared disk sync). Any failure re-reads the nonce, so no gap stays open.
    type Handed = { blocked: Failure } | (Issued & { durable: Promise<unknown> });
    const handed = await lane.withNonce<Handed>(ctx.client, ctx.chainId, async (nonce) => {
      // Blocked since it was picked: nothing is handed out past a hole.
      const blocked = lane.state(ctx.chainId).hole ? await lane.admission(ctx) : undefined;
      if (blocked) return { consumed: false, value: { blocked } };
      const tx = { ...base, nonce };
      const raw = await lane.account.signTransaction(tx);
      const hash = keccak256Hex(bytesOfHex(raw));
      lane.remember(ctx.chainId, nonce, raw);
      const durable = recordSends(ctx, record, lane.address, nonce, hash, raw);
      durable.catch(() => undefined);
      return { consumed: true, value: { hash, nonce, tx, raw, durable } };
    });
    if ("blocked" in handed) return failed(handed.blocked);
    const writing = performance.now();
    try {
      await handed.durable;
    } catch (error) {
      // Not durable, so never sent: no later settle may pick it up and broadcast it.
      void ctx.journal.recordState(record.key, "failed").catch(() => undefined);
      lane.forget(ctx.chainId);
      return unjournaled(error);
    }
    stages.journalMs = (stages.journalMs ?? 0) + performance.now() - writing;
    try {
      sentAt = Date.now();
      sentAfterBlock = newestBlockSeen(ctx.client);
      stages.broadcastAt ??= performance.now();
      const { receipt, issued } = await broadcastResending(
        ctx,
        lane,
        record.key,
        handed,
        waitUntil === "confirmed",
        deadline,
        refused,
        may,
      );
      lane.observe(ctx.chainId, issued.nonce);
      ctx.metrics?.transactionSent(ctx.chainId, lane.address);
      if (receipt) lane.sawMined(ctx.chainId, issued.nonce + 1);
      if (receipt && (receipt.status !== "success" || ctx.confirmations <= 1)) {
        return mined(ctx, record.key, receipt, base.gas);
      }
      sent = { kind: "sent", issued };
    } catch (error) {
      sent = sendFailure(ctx, lane, record.key, error, handed, refused);
    }
    if (sent.kind === "reprice" && !repricedOnce) {
      // The base fee rose since pricing: priced again once, within the fee cap.
      repricedOnce = true;
      const again = await repriced(ctx, base.gas, base).catch(() => undefined);
      if (again && "code" in again) {
        void ctx.journal.recordState(record.key, "failed").catch(() => undefined);
        sent = { kind: "outcome", outcome: failed(again) };
      } else if (again) {
        base = { ...base, ...again };
        sent = { kind: "retry" };
      }
    }
  }
  if (sent.kind === "reprice" || sent.kind === "retry") {
    void ctx.journal.recordState(record.key, "failed").catch(() => undefined);
    const underBaseFee = sent.kind === "reprice";
    const why = underBaseFee
      ? "the node refused the transaction: its max fee is below the base fee of the next block, even priced again; nothing was sent"
      : `the node kept refusing our nonce (${refusalsSaid(refused)}); nothing of this payment was taken, try again`;
    const retry = underBaseFee
      ? { retryAfterSeconds: 5 }
      : { retryAfterSeconds: 1, refusal: refused.at(-1)?.kind };
    return failed(failure("settlement_failed", why, { status: 500, ...retry }));
  }
  if (sent.kind === "outcome") return sent.outcome;
  if (waitUntil === "submitted") return { kind: "submitted", hash: sent.issued.hash };
  const { hash, tx } = sent.issued;
  // Past the deadline: looked for once, then answered pending for the reconciler.
  const spent = Date.now() >= deadline ? deadline : undefined;
  return follow(ctx, lane, record.key, [hash], tx, may, sentAt, sentAfterBlock, spent);
}

/** Journals the transaction under its key and each member's (pointing back), for their retries. */
function recordSends(
  ctx: SendingAccess,
  record: SettlementRecord,
  signer: Address,
  txNonce: number,
  hash: Hex,
  raw: Hex,
): Promise<unknown> {
  const { key, expect, action } = record;
  const entry = { key, network: caip2(ctx.chainId), signer, txNonce, expect, action };
  const members = (action?.members ?? []).filter((member) => member !== key);
  if (!action || members.length === 0) return ctx.journal.recordSend(entry, hash, raw);
  const pointer = { name: action.name, chargeTo: [], partOf: key };
  return Promise.all([
    ctx.journal.recordSend(entry, hash, raw),
    ...members.map((member) =>
      ctx.journal.recordSend({ ...entry, key: member, action: pointer }, hash, raw),
    ),
  ]);
}

type Sent =
  | { readonly kind: "sent"; readonly issued: Issued }
  | { readonly kind: "retry" }
  /** Refused for a max fee below the next block's base fee: priced again, once. */
  | { readonly kind: "reprice" }
  | { readonly kind: "outcome"; readonly outcome: CallOutcome };

function wouldRevert(error: unknown): CallOutcome {
  return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
}

/** What a broadcast's failure means: sent after all, next nonce, price again, or an outcome. */
function sendFailure(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  error: unknown,
  issued: Issued,
  refused: Refused[],
): Sent {
  const outcome = (o: CallOutcome): Sent => ({ kind: "outcome", outcome: o });
  if (neverReachedNode(error)) {
    void ctx.journal.recordState(key, "failed").catch(() => undefined);
    lane.forget(ctx.chainId);
    // Refused before the node: not sent; the payment is free to be settled again.
    return outcome(infrastructure(error, "broadcasting, nothing was sent"));
  }
  if (isUnreachable(error)) {
    // The node may have taken it before the connection broke: keep the hash, never re-send.
    lane.observe(ctx.chainId, issued.nonce);
    const why = `the broadcast's answer was lost (${shortText(error)}); the transaction may be pending`;
    return outcome(pending(issued.hash, why));
  }
  const kind = refusal(error);
  if (kind === "known" || kind === "nonce") {
    lane.observe(ctx.chainId, issued.nonce);
    if (kind === "known") return { kind: "sent", issued };
    refused.push({ kind, text: nodeSaid(error) });
    // Someone else holds this nonce: re-read, past it and past those handed out meanwhile.
    lane.refresh(ctx.chainId);
    return { kind: "retry" };
  }
  // The nonce is still free: read again for the next send.
  lane.forget(ctx.chainId);
  if (kind === "fee") return { kind: "reprice" };
  void ctx.journal.recordState(key, "failed").catch(() => undefined);
  if (isRevert(error)) return outcome(wouldRevert(error));
  if (kind === "other") return outcome(infrastructure(error, "the node refused the transaction"));
  refused.push({ kind, text: nodeSaid(error) });
  const why = `the node did not take the transaction, re-sent as long as the settle allows (${refusalsSaid(refused)}); nothing of this payment was taken, try again`;
  return outcome(
    failed(failure("settlement_failed", why, { status: 500, retryAfterSeconds: 2, refusal: kind })),
  );
}
