/**
 * Sending a channel transaction of ours (a claim, a settle, a refund) with the same rules as a
 * payment's: one at a time per key, written down before it is broadcast, picked back up (never
 * sent twice) when the journal already holds it, on our keys' nonce lanes so it never collides
 * with another of our transactions, within its gas bound and the chain's fee cap.
 */
import type { Hex, TransactionReceipt } from "viem";
import { unrecorded } from "../../core/answers.js";
import { isAnswered } from "../../core/store.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { GasNeed } from "../chain/gas-bounds.js";
import type { CallOutcome, ContractCall } from "../chain/outcome.js";
import { reconcile } from "../chain/reconcile.js";
import { prepareCall, sendCall, simulateCall } from "../chain/transactions.js";
import type { EvmContext } from "../context.js";

export interface Action {
  /** What the chain consumes (the journal's and the claim's key). */
  readonly key: string;
  readonly call: ContractCall;
  readonly gas: GasNeed;
  /** Who the answer names as payer, if anyone. */
  readonly payer?: string | undefined;
  /** Why it would revert (or did), in the official reasons. */
  readonly reverts: (detail: string | undefined) => Failure;
}

export type Sent =
  | { readonly ok: true; readonly hash: Hex; readonly receipt?: TransactionReceipt | undefined }
  | {
      readonly ok: false;
      readonly result: SettleResult;
      /** It would have reverted (nothing sent), or it was mined and reverted (our gas spent). */
      readonly reverted?:
        | { readonly mined: false }
        | { readonly mined: true; readonly receipt: TransactionReceipt };
    };

/** Sends `action` (or follows the one the journal holds under its key) to `waitUntil`. */
export async function sendAction(
  ctx: EvmContext,
  action: Action,
  waitUntil: WaitUntil,
): Promise<Sent> {
  if (!(await ctx.journal.claim(action.key))) {
    return refused(
      failure("settlement_in_progress", "this is being settled right now; retry in a moment"),
    );
  }
  let sent: Sent | undefined;
  try {
    sent = await sendClaimed(ctx, action, waitUntil);
    return sent;
  } finally {
    const releasing = Promise.resolve(ctx.journal.release(action.key)).catch(() => undefined);
    if (!sent?.ok) await releasing;
  }
}

async function sendClaimed(ctx: EvmContext, action: Action, waitUntil: WaitUntil): Promise<Sent> {
  const entry = await ctx.journal.get(action.key);
  if (entry && waitUntil !== "simulated") {
    const state = ctx.answers.unsent(entry) ? "landed" : entry.state;
    if (isAnswered(state)) {
      return refused(
        failure(
          "duplicate_settlement",
          `this was already settled in ${entry.hashes.at(-1)}; it is not sent again`,
        ),
      );
    }
    if (state === "broadcast" || state === "landed") {
      const picked = await reconcile(ctx, entry);
      if (picked !== "gone") return answered(ctx, action, picked);
      await ctx.journal.recordState(action.key, "dropped").catch(() => undefined);
    }
  }
  const prepared = await prepareCall(ctx, action.call, { reuse: false }, action.gas);
  if ("kind" in prepared) return answered(ctx, action, prepared);
  if (waitUntil === "simulated") return answered(ctx, action, await simulateCall(ctx, prepared));
  return answered(ctx, action, await sendCall(ctx, prepared, waitUntil, { key: action.key }));
}

const refused = (f: Failure, payer?: string, hash?: Hex) => ({
  ok: false as const,
  result: { ok: false as const, failure: f, payer, transactionHash: hash },
});

async function answered(ctx: EvmContext, action: Action, outcome: CallOutcome): Promise<Sent> {
  const { payer } = action;
  switch (outcome.kind) {
    case "simulated":
      return { ok: true, hash: outcome.hash };
    case "submitted":
    case "confirmed": {
      // Written down as answered before it is handed over, as every success is (core/answers.ts).
      if (!(await ctx.answers.answer(action.key, outcome.kind === "confirmed"))) {
        return { ok: false, result: unrecorded(payer ?? "", outcome.hash) };
      }
      const receipt = outcome.kind === "confirmed" ? outcome.receipt : undefined;
      return { ok: true, hash: outcome.hash, receipt };
    }
    case "would-revert":
      return {
        ...refused(action.reverts(outcome.reason ?? outcome.detail), payer),
        reverted: { mined: false },
      };
    case "reverted":
      void ctx.journal.recordState(action.key, "failed").catch(() => undefined);
      return {
        ...refused(action.reverts("it reverted on chain"), payer, outcome.hash),
        reverted: { mined: true, receipt: outcome.receipt },
      };
    case "failed":
      return refused(outcome.failure, payer, outcome.hash);
  }
}
