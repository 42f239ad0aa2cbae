/** Every exact-EVM method's steps through the settle loop, so the money rules live once: one
 * settle per authorization, journaled pick-up first, listed assets only, waste charged, no
 * broadcast the payer's balance less in-flight can't cover, gas under the method's bound. */
import { unrecorded } from "../../core/answers.js";
import { stageObserver } from "../../core/metrics.js";
import {
  inProgress,
  type MaySend,
  type Outcome,
  type SettleSteps,
  Success,
  settleInTurn,
  unsent,
} from "../../core/settle-loop.js";
import { isAnswered, type JournalEntry } from "../../core/store.js";
import { type Failure, failed, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { credited } from "../chain/builder-code.js";
import { evmEntry } from "../chain/entry.js";
import { estimateFees } from "../chain/fees.js";
import { hasGasEstimate } from "../chain/gas.js";
import { evmLedgerReads, heldByTransfer } from "../chain/ledger-reads.js";
import { type CallOutcome, type ContractCall, sentData } from "../chain/outcome.js";
import { landPreludes } from "../chain/prelude.js";
import { recheckAnswered, reconcile } from "../chain/reconcile.js";
import { type PreparedCall, prepareCall, sendCall, simulateCall } from "../chain/transactions.js";
import type { EvmContext, PaymentMethod } from "../context.js";
import { answeredAgain, judgeLanded, noteState, track } from "./judge.js";
import type { ExactMethod, Verified } from "./method.js";

async function answer<P>(
  method: ExactMethod<P>,
  ctx: EvmContext,
  verified: Pick<Verified<P>, "payment" | "expect"> & Partial<Verified<P>>,
  key: string,
  outcome: CallOutcome,
): Promise<Outcome<SettleResult>> {
  const payer = verified.expect.from;
  track(ctx, key, verified.expect, outcome, verified.gas?.contractWallet);
  // upto: a success says how much moved.
  const { settledAmount } = verified;
  const amount = settledAmount === undefined ? {} : { amount: settledAmount.toString() };
  // The loop records a success before answering it, so no other caller is answered it again.
  const success = (hash: string, mined: boolean) =>
    new Success<SettleResult>(
      { ok: true, payer, transactionHash: hash, ...amount },
      [key],
      unrecorded(payer, hash),
      mined,
    );
  const settlementFailed = (hash: string, message: string, x402Reason?: string) => ({
    ok: false as const,
    payer,
    transactionHash: hash,
    failure: failure("settlement_failed", message, { x402Reason }),
  });
  switch (outcome.kind) {
    case "simulated":
      return { ok: true, payer, transactionHash: outcome.hash, ...amount };
    case "submitted":
      return success(outcome.hash, false);
    case "confirmed":
      if (!judgeLanded(ctx, verified.expect, outcome.receipt)) {
        void noteState(ctx, key, "failed");
        return settlementFailed(
          outcome.hash,
          "the transaction succeeded but emitted no matching Transfer event",
          "invalid_exact_evm_transfer_event_mismatch",
        );
      }
      return success(outcome.hash, true);
    case "would-revert":
      return {
        ok: false,
        payer,
        failure: await method.diagnose(ctx, verified.payment, outcome.reason ?? outcome.detail),
      };
    case "reverted": {
      const cause = await method.diagnose(ctx, verified.payment, undefined);
      const why = `the transaction reverted on chain (${cause.message})`;
      return settlementFailed(outcome.hash, why, method.revertedReason);
    }
    case "failed":
      return { ok: false, payer, transactionHash: outcome.hash, failure: outcome.failure };
  }
}

const alreadyUsed = (message: string) => failed("nonce_already_used", message);

/** Picks up this key's journaled settlement; undefined when it may be settled afresh. */
async function pickUp<P>(
  method: ExactMethod<P>,
  ctx: EvmContext,
  payment: P,
  entry: JournalEntry,
  may: MaySend | undefined,
): Promise<Outcome<SettleResult> | undefined> {
  // Entries under a settlement's own key always carry its Transfer.
  const expect = evmEntry(entry).expect;
  if (!expect) return undefined;
  const journaled = { payment, expect };
  // Written down as answered by this run, which could not hand the success over: it is not.
  const state = ctx.answers.unsent(entry) ? "landed" : entry.state;
  if (isAnswered(state)) {
    // It may be sent again (dropped by a reorg or the pool): counted against the payer meanwhile.
    ctx.inflight.seed(entry.key, heldByTransfer(ctx.chainId, expect));
    const same = () => method.sameAsJournal(ctx, payment, entry);
    const recheck = await recheckAnswered(ctx, entry, same, may);
    if (recheck.kind !== "resent") ctx.inflight.release(entry.key);
    if (recheck.kind === "standing") {
      if (recheck.receipt && state === "submitted") void noteState(ctx, entry.key, "answered");
      const how = recheck.receipt
        ? "settled"
        : recheck.unseen
          ? "sent (the node read from is behind, and has not seen it yet)"
          : "submitted (not mined yet)";
      return alreadyUsed(`this authorization was already ${how} in ${recheck.hash}`);
    }
    if (recheck.kind === "refused") return { ok: false, failure: recheck.failure };
    if (recheck.kind === "sendable") {
      return alreadyUsed(
        `this authorization was already answered in ${recheck.hash}; its transaction left the node's pool, and a settle that is not a dry run sends it again`,
      );
    }
    if (recheck.kind === "resent") {
      // Its success was answered once already: the transaction is sent again, the success not.
      const outcome = recheck.outcome;
      track(ctx, entry.key, expect, outcome);
      const hash = "hash" in outcome ? outcome.hash : entry.hashes.at(-1);
      if (outcome.kind === "confirmed" && judgeLanded(ctx, expect, outcome.receipt)) {
        void noteState(ctx, entry.key, "answered");
      }
      const mined = outcome.kind === "confirmed" ? "now mined" : "not mined yet";
      return {
        ...alreadyUsed(
          `this authorization was already answered in ${entry.hashes.at(-1)}; its transaction had left the node's pool and was sent again (${mined})`,
        ),
        transactionHash: hash,
      };
    }
    // Dropped by a reorg and not sendable again as it was: settle afresh if it still can pay.
    await noteState(ctx, entry.key, "dropped");
    return undefined;
  }
  if ((state !== "broadcast" && state !== "landed") || !may) return undefined;
  const mismatch = await method.sameAsJournal(ctx, payment, entry);
  if (mismatch) return { ok: false, failure: mismatch };
  // Settled before (timed out, the process died, no success handed over): follow it, never resend.
  const picked = await reconcile(ctx, entry, may);
  if (picked !== "gone") {
    // Gone from the pool and no longer able to land: it is over, and took nothing.
    if (picked.kind === "would-revert") await noteState(ctx, entry.key, "failed");
    return answer(method, ctx, journaled, entry.key, picked);
  }
  await noteState(ctx, entry.key, "dropped");
  ctx.inflight.release(entry.key);
  return undefined;
}

/** The payment, or why it is refused before any chain read: malformed, or its asset unlisted. */
function admit<P>(method: ExactMethod<P>, ctx: EvmContext, request: PaymentRequest) {
  const parsed = method.parse(ctx, request);
  if (!parsed.ok) return { refused: { ok: false as const, failure: parsed.failure } };
  const { payer, asset } = method.identify(ctx, parsed.value);
  const unlisted = notAllowed(ctx, asset);
  if (unlisted) return { refused: { ok: false as const, payer, failure: unlisted } };
  return { payment: parsed.value };
}

/** A verified payment, priced (or, with preludes, to be priced once they landed). */
interface Priced<P> {
  readonly checked: Verified<P>;
  readonly call?: PreparedCall | undefined;
  /** When its reads were made, for the in-flight ledger (-∞: its balance is read anew). */
  readonly mark: number;
}

/** An exact-EVM payment's steps through the settle loop (core/settle-loop.ts). */
function paymentSteps<P>(
  method: ExactMethod<P>,
  ctx: EvmContext,
  request: PaymentRequest,
  payment: P,
): SettleSteps<Priced<P>> {
  const { key, payer, asset, gasKey } = method.identify(ctx, payment);
  const refuse = (result: SettleResult) => ({ ok: false as const, result });
  // Our transaction credits us and whom the payment names (ERC-8021), when a code is configured.
  const creditedCall = (checked: Verified<P>) => credited(ctx.builderCode, checked.call, request);
  let answeredIn: string | undefined;
  return {
    key,
    observe: stageObserver(ctx.metrics, `eip155:${ctx.chainId}`),
    busy: () =>
      failed(inProgress("this authorization is being settled right now; retry in a moment")),
    async pickUp(entry, _waitUntil, may) {
      // Read before the pick-up, which may write the entry down dropped (the file's in place).
      const handedOver = isAnswered(entry.state) && !ctx.answers.unsent(entry);
      const newest = entry.hashes.at(-1);
      const picked = await pickUp(method, ctx, payment, entry, may);
      // A success was handed over for a transaction that can never land: settled afresh below,
      // and never answered a second success (judge.ts).
      if (!picked && handedOver) answeredIn = newest;
      return picked;
    },
    async prepare(waitUntil) {
      const refused = await ctx.gasAtRisk.refusal(ctx.chainId, payer, asset);
      if (refused) return refuse({ ok: false, payer, failure: refused });
      // Settle re-verifies everything; the transfer is simulated here (batched) or by estimating
      // its gas: the first settle on a token estimates, later ones reuse that estimate.
      const mark = ctx.inflight.mark();
      const simulate = gasKey !== undefined && hasGasEstimate(gasKey);
      // The fees, the key's nonce and a first estimate are read in the checks' round trip.
      const fees = estimateFees(ctx);
      fees.catch(() => undefined);
      for (const lane of ctx.signers.lanes) lane.readAhead(ctx.client, ctx.chainId);
      const early = simulate ? undefined : estimateEarly(method, ctx, payment, request);
      const verified = await method.verify(ctx, request, payment, { simulate, settling: true });
      if (!verified.ok) return refuse(failed(verified.failure));
      const checked = verified.value;
      // upto: zero was used, so nothing moves; the authorization stays unspent.
      if (checked.settledAmount === 0n) {
        return refuse({ ok: true, payer, transactionHash: "", amount: "0" });
      }
      const preludes = checked.preludes ?? [];
      if (preludes.length > 0) {
        if (waitUntil !== "simulated") {
          return { ok: true, value: { checked, mark: Number.NEGATIVE_INFINITY } };
        }
        return refuse(
          failed(
            "invalid_request",
            `waitUntil "simulated" cannot dry-run this payment: it takes ${preludes.length + 1} transactions (${preludes.map((p) => p.name).join(", ")}, then the transfer), and the transfer can only be simulated once the others have landed`,
          ),
        );
      }
      const estimated = early && sameCall(early.call, checked.call) ? early.gas : undefined;
      const estimate = { gasKey: checked.gasKey, reuse: simulate, estimated };
      const options = { ...estimate, signer: checked.signer, fees };
      const call = await prepareCall(ctx, creditedCall(checked), checked.gas, options);
      if ("kind" in call) return refuse(unsent(await answer(method, ctx, checked, key, call)));
      return { ok: true, value: { checked, call, mark } };
    },
    async simulate({ checked, call }) {
      const outcome = await simulateCall(ctx, call as PreparedCall);
      return unsent(await answer(method, ctx, checked, key, outcome));
    },
    // Decided where it cannot race: what this payer already has in flight counts.
    async hold({ checked, mark }) {
      const reads = evmLedgerReads(ctx);
      const short = await ctx.inflight.reserve(reads, key, checked.spends, mark);
      return short ? { ok: false, payer: checked.expect.from, failure: short } : undefined;
    },
    async send({ checked, call }, waitUntil, may) {
      let outcome: CallOutcome;
      try {
        outcome = call
          ? await sendCall(ctx, call, waitUntil, { key, expect: checked.expect }, may)
          : await sendInSteps(ctx, checked, creditedCall(checked), key, waitUntil, may);
      } catch (error) {
        // sendCall answers outcomes; should it ever throw, the hold must not outlive it.
        ctx.inflight.release(key);
        throw error;
      }
      const sent = await answer(method, ctx, checked, key, outcome);
      return answeredIn ? answeredAgain(sent, answeredIn) : sent;
    },
  };
}

/** A payment of several transactions, its balance held: each prelude lands, then the payment. */
async function sendInSteps<P>(
  ctx: EvmContext,
  checked: Verified<P>,
  payment: ContractCall,
  key: string,
  waitUntil: Exclude<WaitUntil, "simulated">,
  may: MaySend,
): Promise<CallOutcome> {
  const { from: payer, token: asset } = checked.expect;
  const preludes = checked.preludes ?? [];
  const chargeTo = { payer, asset };
  const stopped = await landPreludes(ctx, key, preludes, checked.signer, chargeTo, may);
  if (stopped) {
    // The payer's own transaction failed after we may have paid its gas: as costly as a revert.
    if (stopped.payersFault) {
      ctx.gasAtRisk.charge(ctx.chainId, { payer, asset, gas: 0n, cause: "reverted" });
    }
    return stopped.outcome;
  }
  const call = await prepareCall(ctx, payment, checked.gas, { signer: checked.signer });
  if ("kind" in call) return call;
  return sendCall(ctx, call, waitUntil, { key, expect: checked.expect }, may);
}

/** A first settle's gas estimate of the payload's call, beside verify's reads (one settlement key). */
function estimateEarly<P>(
  method: ExactMethod<P>,
  ctx: EvmContext,
  payment: P,
  request: PaymentRequest,
): { call: ContractCall; gas: Promise<bigint> } | undefined {
  const [lane, ...others] = ctx.signers.lanes;
  const plain = method.plainCall?.(ctx, payment);
  if (!lane || others.length > 0 || !plain) return undefined;
  const call = credited(ctx.builderCode, plain, request);
  const gas = ctx.client.estimateGas({ account: lane.address, to: call.to, data: sentData(call) });
  gas.catch(() => undefined);
  return { call, gas };
}

const sameCall = (a: ContractCall, b: ContractCall) =>
  a.to.toLowerCase() === b.to.toLowerCase() && a.data === b.data && a.suffix === b.suffix;

/** The operator listed the assets this chain settles, and `asset` is not one of them. */
function notAllowed(ctx: EvmContext, asset: string): Failure | undefined {
  if (!ctx.allowedAssets || ctx.allowedAssets.has(asset.toLowerCase())) return undefined;
  return failure(
    "asset_not_allowed",
    `asset ${asset} is not one this facilitator settles on ${caip2(ctx.chainId)} (its operator lists ${ctx.allowedAssets.size}: allowedAssets in the config file)`,
  );
}

/** An exact-EVM transfer method as the facilitator sees it: verify, and settle through here. */
export function exactPaymentMethod<P>(method: ExactMethod<P>): PaymentMethod {
  return {
    name: method.name,
    accepts: (payload) => method.accepts(payload),
    async verify(ctx, request) {
      const { payment, refused } = admit(method, ctx, request);
      if (refused) return refused;
      const result = await method.verify(ctx, request, payment, { simulate: true });
      return result.ok
        ? { ok: true, payer: result.value.expect.from }
        : { ok: false, failure: result.failure };
    },
    async settle(ctx, request, waitUntil) {
      const { payment, refused } = admit(method, ctx, request);
      if (refused) return refused;
      return settleInTurn(ctx, paymentSteps(method, ctx, request, payment), waitUntil);
    },
    settlementKey(ctx, request) {
      const parsed = method.parse(ctx, request);
      return parsed.ok ? method.identify(ctx, parsed.value).key : undefined;
    },
  };
}
