/** Our channel transaction under a payment's rules: one per key, journaled first with whom its
 * waste is charged to, refused while payers are over budget, never re-sent as is after a revert. */
import { type Hex, isAddressEqual, type TransactionReceipt } from "viem";
import { unrecorded } from "../core/answers.js";
import { stageObserver } from "../core/metrics.js";
import {
  inProgress,
  inTurn,
  type Outcome,
  type SettleSteps,
  Success,
  settleInTurn,
  unsent,
} from "../core/settle-loop.js";
import { type Chargeable, isAnswered, type JournalEntry } from "../core/store.js";
import { type Failure, failure } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import { isUnreachable } from "../rpc/rpc.js";
import { credited } from "./chain/builder-code.js";
import { evmEntry } from "./chain/entry.js";
import { chargeWaste } from "./chain/gas-at-risk.js";
import type { GasNeed } from "./chain/gas-bounds.js";
import { type CallOutcome, type ContractCall, sentData } from "./chain/outcome.js";
import { reconcile } from "./chain/reconcile.js";
import { type PreparedCall, prepareCall, sendCall, simulateCall } from "./chain/transactions.js";
import type { EvmContext } from "./context.js";

export interface Action {
  /** What the chain consumes (the journal's and the claim's key). */
  readonly key: string;
  readonly call: ContractCall;
  readonly gas: GasNeed;
  /** Who the answer names as payer, if anyone. */
  readonly payer?: string | undefined;
  /** Why it would revert (or did), in the official reasons. */
  readonly reverts: (detail: string | undefined) => Failure;
  /** In a word, for the store ("claim", "settle", "refund"). */
  readonly name: string;
  /** Whose doing it is if it wastes gas: each is charged a share, and waits while over budget. */
  readonly chargeTo: readonly Chargeable[];
  /** The caller charges a revert seen here itself (a batch finds its culprits). */
  readonly chargedByCaller?: boolean | undefined;
  /** Other requests it answers (a batch's claims), whose store claims the caller holds. */
  readonly members?: readonly string[] | undefined;
  /** The caller holds the store's claim on `key` already. */
  readonly claimed?: boolean | undefined;
  /** The payment request it answers: its builder codes are credited with ours (ERC-8021). */
  readonly payment?: Parameters<typeof credited>[2];
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
export function sendAction(ctx: EvmContext, action: Action, waitUntil: WaitUntil): Promise<Sent> {
  const steps = actionSteps(ctx, action);
  return action.claimed ? inTurn(ctx, steps, waitUntil) : settleInTurn(ctx, steps, waitUntil);
}

function actionSteps(ctx: EvmContext, asked: Action): SettleSteps<PreparedCall, Sent> {
  const action = { ...asked, call: credited(ctx.builderCode, asked.call, asked.payment) };
  const { key, name, chargeTo, members } = action;
  return {
    key,
    observe: stageObserver(ctx.metrics, `eip155:${ctx.chainId}`),
    busy: () => refused(inProgress()),
    async pickUp(entry, _waitUntil, may) {
      if (!may) return undefined;
      const state = ctx.answers.unsent(entry) ? "landed" : entry.state;
      const settled = `this was already settled in ${entry.hashes.at(-1)}; it is not sent again`;
      if (isAnswered(state)) return refused(failure("duplicate_settlement", settled));
      if (state === "broadcast" || state === "landed") {
        const picked = await reconcile(ctx, entry, may);
        if (picked !== "gone") return answered(ctx, action, picked);
        await ctx.journal.recordState(key, "dropped").catch(() => undefined);
      }
      const reverted = state === "failed" && (await revertedAsIs(ctx, entry, action.call));
      if (!reverted) return undefined;
      return refused(
        action.reverts(
          `it reverted on chain in ${reverted}, and the same transaction is not sent again`,
        ),
        action.payer,
      );
    },
    async prepare() {
      for (const { payer, asset } of chargeTo) {
        const over = await ctx.gasAtRisk.refusal(ctx.chainId, payer, asset);
        if (over) return { ok: false, result: refused(over, action.payer) };
      }
      const prepared = await prepareCall(ctx, action.call, action.gas);
      if ("kind" in prepared) return { ok: false, result: unsent(answered(ctx, action, prepared)) };
      return { ok: true, value: prepared };
    },
    simulate: async (prepared) => unsent(answered(ctx, action, await simulateCall(ctx, prepared))),
    hold: async () => undefined,
    async send(prepared, waitUntil, may) {
      const record = { key, action: { name, chargeTo, ...(members?.length ? { members } : {}) } };
      return answered(ctx, action, await sendCall(ctx, prepared, waitUntil, record, may));
    },
  };
}

/** The journaled hash if it reverted with this very call: re-sent unchanged it would again. */
async function revertedAsIs(
  ctx: EvmContext,
  entry: JournalEntry,
  call: ContractCall,
): Promise<Hex | undefined> {
  const hash = evmEntry(entry).hashes.at(-1);
  if (!hash) return undefined;
  try {
    const [receipt, tx] = await Promise.all([
      ctx.client.getTransactionReceipt({ hash }),
      ctx.client.getTransaction({ hash }),
    ]);
    const same = tx.to !== null && isAddressEqual(tx.to, call.to) && tx.input === sentData(call);
    return receipt.status === "reverted" && same ? hash : undefined;
  } catch (error) {
    // Never mined (or forgotten by the node): nothing says it would revert again.
    if (isUnreachable(error)) throw error;
    return undefined;
  }
}

/** A refusal as `Sent`: the settle answer it ends in, naming the payer and a hash sent. */
export const refused = (f: Failure, payer?: string, hash?: Hex) => ({
  ok: false as const,
  result: { ok: false as const, failure: f, payer, transactionHash: hash },
});

function answered(ctx: EvmContext, action: Action, outcome: CallOutcome): Outcome<Sent> {
  const { payer } = action;
  switch (outcome.kind) {
    case "simulated":
      return { ok: true, hash: outcome.hash };
    case "submitted":
    case "confirmed": {
      const mined = outcome.kind === "confirmed";
      const keys = [action.key, ...(action.members ?? [])];
      const receipt = mined ? outcome.receipt : undefined;
      const pending = { ok: false as const, result: unrecorded(payer ?? "", outcome.hash) };
      return new Success<Sent>({ ok: true, hash: outcome.hash, receipt }, keys, pending, mined);
    }
    case "would-revert":
      return {
        ...refused(action.reverts(outcome.reason ?? outcome.detail), payer),
        reverted: { mined: false },
      };
    case "reverted":
      void ctx.journal.recordState(action.key, "failed").catch(() => undefined);
      if (!action.chargedByCaller) chargeWaste(ctx, action.chargeTo, outcome.receipt);
      return {
        ...refused(action.reverts("it reverted on chain"), payer, outcome.hash),
        reverted: { mined: true, receipt: outcome.receipt },
      };
    case "failed":
      return refused(outcome.failure, payer, outcome.hash);
  }
}
