/** How a sent Solana settlement comes out: its answer, and what ledger, journal, throttle and metrics hear. */
import { unrecorded } from "../../core/answers.js";
import { type Outcome, Success } from "../../core/settle-loop.js";
import { failed } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { SvmSpend } from "../chain/ledger-reads.js";
import type { SvmSettleContext } from "./context.js";
import { transactionFeeLamports } from "./fees.js";
import { followSignature, type Landing } from "./landing.js";
import { describeTransactionError, type SignatureStatus } from "./rpc.js";
import { smartWalletUnpaid } from "./smart-wallet-settle.js";
import type { SvmPayment } from "./types.js";

/** The payer throttle's chain for Solana payers (no EVM chain has id 0). */
export const SVM_THROTTLE_CHAIN = 0;

/** The x402 reason a settlement that failed on chain carries, per protocol version. */
export const FAILED_REASON = { 1: "transaction_failed", 2: "invalid_exact_svm_transaction_failed" };

/** A payment being settled, signed and keyed: what each step of its settlement is handed. */
export interface Settling {
  readonly ctx: SvmSettleContext;
  readonly request: PaymentRequest;
  readonly payment: SvmPayment;
  /** The transaction's id, and the whole transaction (base64) with our signature in place. */
  readonly signed: { readonly signature: string; readonly wire: string };
  readonly key: string;
  readonly spend: SvmSpend;
}

export function follow(s: Settling, background = false): Promise<Landing> {
  return followSignature(s.ctx.client, s.signed.signature, s.payment.recentBlockhash, {
    timeoutMs: s.ctx.confirmTimeoutMs,
    pollMs: s.ctx.pollMs,
    background,
  });
}

/** How a sent transaction came out, as the answer; the ledger, journal and throttle follow it. */
export async function conclude(s: Settling, landing: Landing): Promise<Outcome<SettleResult>> {
  const { ctx, signed, payment, request } = s;
  const payer = payment.payer;
  const hash = signed.signature;
  switch (landing.kind) {
    case "confirmed": {
      const unpaid = payment.smartWallet
        ? await smartWalletUnpaid(ctx, payment, signed.signature)
        : undefined;
      // Landed without paying: it took our fee and nothing else (charged to the payer).
      if (unpaid?.failure.code === "settlement_failed")
        track(s, { kind: "failed", slot: 0n, err: null });
      if (unpaid) return unpaid;
      track(s, landing);
      return answerSuccess(s);
    }
    case "failed":
    case "expired": {
      track(s, landing);
      const why =
        landing.kind === "failed"
          ? `the transaction failed on chain: ${describeTransactionError(landing.err)}`
          : "the transaction expired before it landed (its blockhash is more than 150 blocks old): nothing was paid, and the payer must sign a new payment";
      const x402Reason = FAILED_REASON[request.x402Version];
      return { ...failed("settlement_failed", why, { x402Reason }), payer, transactionHash: hash };
    }
    case "timeout":
      if (ctx.watchSubmitted) void watch(s);
      return {
        ...failed(
          "settlement_pending",
          `the transaction was sent but not confirmed within ${Math.round(ctx.confirmTimeoutMs / 1000)} s; retry to follow it (it is never sent twice)`,
        ),
        payer,
        transactionHash: hash,
      };
  }
}

/** Tells the metrics sink how a transaction came out (a landed one cost us its fee). */
export function report(s: Settling, outcome: "sent" | "confirmed" | "failed" | "expired"): void {
  const { payment, ctx } = s;
  const landed = outcome === "confirmed" || outcome === "failed";
  ctx.metrics?.svmTransaction?.({
    network: ctx.network,
    feePayer: payment.feePayer,
    signature: s.signed.signature,
    outcome,
    feeLamports: landed
      ? transactionFeeLamports(
          payment.transaction.header.numSignerAccounts,
          payment.computeUnitLimit,
          payment.computeUnitPrice,
        )
      : undefined,
  });
}

/** Ends the payer's hold: a failed or expired transaction took nothing, a failure is charged. */
function track(s: Settling, landing: Exclude<Landing, { kind: "timeout" }>): void {
  if (landing.kind === "confirmed") {
    s.ctx.ledger.landed(s.key, landing.slot);
    report(s, "confirmed");
    return;
  }
  report(s, landing.kind);
  abandon(s);
  // A payer the journal did not keep (a followed smart wallet's) is not charged.
  if (landing.kind === "failed" && s.payment.payer !== "") {
    s.ctx.throttle.charge(SVM_THROTTLE_CHAIN, s.payment.payer);
  }
}

/** Nothing of it will land: its payer's hold ends, and the journal says it failed. */
export function abandon(s: Settling): void {
  s.ctx.ledger.release(s.key);
  void s.ctx.journal.recordState(s.key, "failed").catch(() => undefined);
}

/** Success, once the loop made the store hold it (one it does not hold could be answered twice). */
export function answerSuccess(s: Settling, mined = true): Success<SettleResult> {
  const payer = s.payment.payer;
  const hash = s.signed.signature;
  const result = { ok: true as const, payer, transactionHash: hash };
  return new Success<SettleResult>(result, [s.key], unrecorded(payer, hash), mined);
}

/** The chain already has this transaction: a success is never answered for it again. */
export function alreadyOnChain(
  s: Settling,
  status: SignatureStatus | null | undefined,
  what: string,
): SettleResult {
  const payer = s.payment.payer;
  const sig = s.signed.signature;
  if (status && status.err !== null) {
    return {
      ...failed(
        "settlement_failed",
        `this transaction already failed on chain (${sig}: ${describeTransactionError(status.err)}); the payer must sign a new payment`,
        { x402Reason: FAILED_REASON[s.request.x402Version] },
      ),
      payer,
    };
  }
  const where = status ? ` in slot ${status.slot}` : " (the chain no longer shows it)";
  return { ...failed("duplicate_settlement", `this transaction ${what}${where}: ${sig}`), payer };
}

/** The chain has it: never a second success; a smart wallet's unpaid one keeps its answer. */
export async function landedBefore(s: Settling, status: SignatureStatus): Promise<SettleResult> {
  if (status.err === null && s.payment.smartWallet) {
    const unpaid = await smartWalletUnpaid(s.ctx, s.payment, s.signed.signature);
    if (unpaid?.failure.code === "settlement_failed") return unpaid;
  }
  return alreadyOnChain(s, status, "already landed");
}

/** Follows a transaction nobody waits for, to end its payer's hold and charge a failure. */
export async function watch(s: Settling): Promise<void> {
  const landing = await follow(s, true).catch(() => undefined);
  if (landing && landing.kind !== "timeout") track(s, landing);
}
