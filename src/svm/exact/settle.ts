/** Our Ed25519 signature is deterministic, so the transaction id follows from the message and keys
 * the journal: journaled before sent, never sent anew, never paid twice. */
import { stageObserver } from "../../core/metrics.js";
import {
  inProgress,
  type MaySend,
  type Outcome,
  type SettleSteps,
  settleInTurn,
} from "../../core/settle-loop.js";
import { isAnswered, type JournalEntry } from "../../core/store.js";
import { FacilitatorError, failed, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { isUnreachable, neverReachedNode } from "../../rpc/rpc.js";
import { SvmLedgerReads, svmHeld } from "../chain/ledger-reads.js";
import type { SvmSettleContext } from "./context.js";
import { SVM_REASONS } from "./reasons.js";
import { nodeRefusal, resendUnseen, sendTransaction, signatureStatuses, simulate } from "./rpc.js";
import {
  abandon,
  alreadyOnChain,
  answerSuccess,
  conclude,
  FAILED_REASON,
  follow,
  landedBefore,
  report,
  type Settling,
  SVM_THROTTLE_CHAIN,
  watch,
} from "./settle-outcome.js";
import { signAsFeePayer } from "./settlement-key.js";
import { journaledSmartWallet } from "./smart-wallet-settle.js";
import type { SvmPayment } from "./types.js";
import { checkSvmRequest, refuse, type SvmRefusal, simulationRefusal } from "./verify.js";

const DUPLICATE_REASON = "duplicate_settlement";

export async function settleExactSvm(
  ctx: SvmSettleContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const checked = await checkSvmRequest(ctx, request);
  let payment: SvmPayment;
  if (checked.ok) payment = checked.payment;
  else {
    const sent = checked.simulated ? await journaledSmartWallet(ctx, checked.simulated) : undefined;
    if (!sent) return asSettleRefusal(checked);
    payment = sent;
  }
  // A smart wallet's success waits for its transfer on chain: never answered before it lands.
  if (payment.smartWallet && waitUntil === "submitted") waitUntil = "confirmed";
  const ours = signAsFeePayer(ctx.network, payment.transaction, ctx.keys);
  if (!ours) {
    return refuse(
      "facilitator_mismatch",
      SVM_REASONS.feePayerNotManaged,
      `no key of fee payer ${payment.feePayer} is configured here`,
      payment.payer,
    );
  }
  const signed = {
    signature: ours.signature,
    wire: withFirstSignature(request.payload.transaction as string, ours.bytes),
  };
  const { mint, source, amount, decimals } = payment;
  const spend = { network: ctx.network, mint, source, amount, decimals };
  const s: Settling = { ctx, request, payment, signed, key: ours.key, spend };
  return settleInTurn(ctx, svmSteps(s), waitUntil);
}

/** A refusal of verify's, as settle answers it: a transaction already landed is its 409. */
function asSettleRefusal(refused: SvmRefusal): SvmRefusal {
  if (refused.failure.code !== "duplicate_settlement") return refused;
  const { status: _, ...rest } = refused.failure;
  return { ...refused, failure: rest };
}

/** A Solana payment's steps through the settle loop (core/settle-loop.ts). */
function svmSteps(s: Settling): SettleSteps<{ readonly mark: number }> {
  const { ctx, payment, signed, request } = s;
  const payer = payment.payer;
  return {
    key: s.key,
    observe: stageObserver(ctx.metrics, ctx.network),
    busy: () => ({
      ok: false,
      payer,
      failure: inProgress(
        "this transaction is being settled right now; retry in a moment",
        DUPLICATE_REASON,
      ),
    }),
    pickUp: (entry, _waitUntil, may) => pickUp(s, entry, may),
    async prepare() {
      const throttled = ctx.throttle.refusal(SVM_THROTTLE_CHAIN, payer);
      if (throttled) return { ok: false, result: { ok: false, payer, failure: throttled } };
      // A signature the chain already knows was settled (by us or anyone): never a second success.
      const mark = ctx.ledger.mark();
      const [[status], simulated] = await Promise.all([
        signatureStatuses(ctx.client, [signed.signature], true),
        simulate(ctx.client, signed.wire, { sigVerify: true, commitment: "processed" }),
      ]);
      if (status) return { ok: false, result: await landedBefore(s, status) };
      if (!simulated.ok) {
        return { ok: false, result: simulationRefusal(request, simulated, payment, "settle") };
      }
      return { ok: true, value: { mark } };
    },
    simulate: async () => ({ ok: true, payer, transactionHash: signed.signature }),
    async hold({ mark }) {
      const reads = new SvmLedgerReads(ctx.client, ctx.journal);
      const short = await ctx.ledger.reserve(reads, s.key, [s.spend], mark, [signed.signature]);
      return short ? { ok: false, payer, failure: short } : undefined;
    },
    send: (_, waitUntil, may) => sendAndFollow(s, waitUntil, may),
  };
}

/** The wire transaction with `signature` as its first (the fee payer's) signature. */
function withFirstSignature(base64: string, signature: Uint8Array): string {
  const bytes = Buffer.from(base64, "base64");
  // The signature count is a compact-u16; its length is 1 to 3 bytes.
  let offset = 0;
  while ((bytes[offset] as number) & 0x80) offset++;
  bytes.set(signature, offset + 1);
  return bytes.toString("base64");
}

/** A journaled settlement of this transaction: follow it, or say it was settled. */
async function pickUp(
  s: Settling,
  entry: JournalEntry,
  may: MaySend | undefined,
): Promise<Outcome<SettleResult> | undefined> {
  const { ctx, signed, payment } = s;
  // Written down as answered by this run, which could not hand the success over: it is not.
  const state = ctx.answers.unsent(entry) ? "landed" : entry.state;
  // A success was answered for it already (a submitted one is followed by the reconciler).
  if (isAnswered(state)) {
    const [status] = await signatureStatuses(ctx.client, [signed.signature], true);
    return alreadyOnChain(
      s,
      status,
      `was already ${state === "submitted" ? "submitted" : "settled"}`,
    );
  }
  // Landed with no success handed over: follow it to its answer, as a broadcast one.
  if ((state !== "broadcast" && state !== "landed") || !may) return undefined;
  // Sent before, with no answer given (it timed out, or the process died): never send anew.
  ctx.ledger.seed(s.key, [svmHeld(s.spend)], [signed.signature]);
  const [status] = await signatureStatuses(ctx.client, [signed.signature], true);
  if (!status) {
    const wire = entry.raws.at(-1) ?? signed.wire;
    const unseen = await resendUnseen(
      ctx.client,
      signed.signature,
      payment.recentBlockhash,
      wire,
      may,
    );
    if (unseen === "expired") return conclude(s, { kind: "expired" });
  }
  return conclude(s, await follow(s));
}

/** Writes the signed transaction down, sends it, and follows it to `waitUntil`. */
async function sendAndFollow(
  s: Settling,
  waitUntil: Exclude<WaitUntil, "simulated">,
  may: MaySend,
): Promise<Outcome<SettleResult>> {
  const { ctx, payment, signed, request } = s;
  const payer = payment.payer;
  const observe = stageObserver(ctx.metrics, ctx.network);
  const writing = performance.now();
  try {
    // No nonce (0); the expected transfer names the mint and token accounts.
    const { mint: token, source: from, destination: to, amount } = payment;
    const expect = { token, from, to, value: amount.toString() };
    const entry = {
      key: s.key,
      network: ctx.network,
      signer: payment.feePayer,
      txNonce: 0,
      expect,
    };
    await ctx.journal.recordSend(entry, signed.signature, signed.wire);
    observe?.("journal", (performance.now() - writing) / 1000);
  } catch (error) {
    abandon(s);
    const why = `cannot write the settlement journal: ${String(error)}`;
    const cause =
      error instanceof FacilitatorError
        ? error.failure
        : failure("settlement_failed", why, { status: 500 });
    const { message } = cause;
    const told = /nothing was sent/.test(message) ? message : `${message}; nothing was sent`;
    return { ok: false, payer, failure: { ...cause, message: told } };
  }
  const broadcastAt = performance.now();
  const reached = () => observe?.("chain", (performance.now() - broadcastAt) / 1000);
  try {
    await sendTransaction(ctx.client, signed.wire, may);
  } catch (error) {
    if (neverReachedNode(error) || !isUnreachable(error)) {
      abandon(s);
      if (neverReachedNode(error)) throw error;
      const why = `the node refused the transaction: ${nodeRefusal(error)}`;
      const x402Reason = FAILED_REASON[request.x402Version];
      return { ...failed("settlement_failed", why, { status: 500, x402Reason }), payer };
    }
    // The answer was lost, not the transaction: it may be in the node's hands. Follow it.
  }
  report(s, "sent");
  if (waitUntil === "submitted") {
    if (ctx.watchSubmitted) void watch(s);
    reached();
    return answerSuccess(s, false);
  }
  const landing = await follow(s);
  reached();
  return conclude(s, landing);
}
