/** A claim the store already holds (any replica, alone or in a batch): followed, not sent again. */
import type { Hex, TransactionReceipt } from "viem";
import { unrecorded } from "../../core/answers.js";
import { inProgress, type MaySend, type Outcome, Success } from "../../core/settle-loop.js";
import { isAnswered, type JournalEntry } from "../../core/store.js";
import { chargeWaste } from "../chain/gas-at-risk.js";
import { reconcile } from "../chain/reconcile.js";
import type { EvmContext } from "../context.js";
import { refused, type Sent } from "../send-action.js";

/** The claim `entry`'s transaction, or undefined when none stands (unsent, reverted, dropped). */
export async function pickUpClaim(
  ctx: EvmContext,
  entry: JournalEntry,
  may: MaySend,
): Promise<Outcome<Sent> | undefined> {
  const key = entry.key;
  const batchKey = entry.action?.partOf;
  const sent = batchKey ? await ctx.journal.get(batchKey) : entry;
  if (!sent) return undefined;
  if (isAnswered(entry.state) || isAnswered(sent.state)) {
    return answer(key, sent.hashes.at(-1) as Hex, sent.state !== "submitted");
  }
  if (sent.state !== "broadcast" && sent.state !== "landed") return undefined;
  // The batch's own entry is followed under its claim: one follower at a time.
  if (batchKey && !(await ctx.journal.claim(batchKey))) return refused(inProgress());
  try {
    return await follow(ctx, key, sent, may);
  } finally {
    if (batchKey) await Promise.resolve(ctx.journal.release(batchKey)).catch(() => undefined);
  }
}

async function follow(
  ctx: EvmContext,
  key: string,
  sent: JournalEntry,
  may: MaySend,
): Promise<Outcome<Sent> | undefined> {
  const picked = await reconcile(ctx, sent, may);
  if (picked === "gone") {
    await ctx.journal.recordState(sent.key, "dropped").catch(() => undefined);
    return undefined;
  }
  if (picked.kind === "confirmed") {
    // The batch's own entry is over (the requests it answers are recorded by the loop).
    if (sent.key !== key) void ctx.journal.recordState(sent.key, "answered").catch(() => undefined);
    return answer(key, picked.hash, true, picked.receipt);
  }
  if (picked.kind === "failed") return refused(picked.failure, undefined, picked.hash);
  // Gone from the pool, and it would revert now: it is over; the claim is judged afresh.
  if (picked.kind === "would-revert") {
    await ctx.journal.recordState(sent.key, "failed").catch(() => undefined);
  }
  // Nobody saw it revert: charged now, as the sender would have. The claim is judged afresh.
  if (picked.kind === "reverted") chargeWaste(ctx, sent.action?.chargeTo ?? [], picked.receipt);
  return undefined;
}

/** A success the loop records under the claim's key before it answers it. */
const answer = (key: string, hash: Hex, mined: boolean, receipt?: TransactionReceipt) =>
  new Success<Sent>(
    { ok: true, hash, receipt },
    [key],
    { ok: false, result: unrecorded("", hash) },
    mined,
  );
