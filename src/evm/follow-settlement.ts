/** The reconciler's look at one unfinished EVM settlement: re-sent if dropped and ours to send. */
import type { Followed } from "../core/family.js";
import type { MaySend } from "../core/settle-loop.js";
import type { JournalEntry } from "../core/store.js";
import { caip2 } from "../protocol/networks.js";
import { evmEntry } from "./chain/entry.js";
import { chargeWaste } from "./chain/gas-at-risk.js";
import { reconcile } from "./chain/reconcile.js";
import { stillSucceeds } from "./chain/signers.js";
import type { EvmContext } from "./context.js";
import { judgeLanded, track } from "./exact/judge.js";

/** A reconciler's pass does not wait long for any one transaction: the next pass looks again. */
const FOLLOW_MS = 5_000;

export async function followSettlement(
  ctx: EvmContext,
  entry: JournalEntry,
  may: MaySend,
): Promise<Followed> {
  const newest = entry.hashes.at(-1);
  const at = (outcome: Followed["outcome"], transaction: string | undefined, detail: string) => ({
    outcome,
    network: caip2(ctx.chainId),
    transaction,
    detail,
  });
  const expect = evmEntry(entry).expect;
  const waiting = { ...ctx, confirmTimeoutMs: Math.min(ctx.confirmTimeoutMs, FOLLOW_MS) };
  const picked = await reconcile(waiting, entry, may);
  if (picked === "gone" && (await owedAfresh(ctx, entry))) {
    return at(
      "open",
      newest,
      "answered submitted, but its nonce went to another transaction, so it can never land; the payment's retry settles it afresh (answered nonce_already_used, not a second success)",
    );
  }
  if (picked === "gone") {
    ctx.inflight.release(entry.key);
    endSharedHold(ctx, entry.key);
    return at(
      "dropped",
      newest,
      "its nonce went to another transaction, so it can never land; a settle of the payment starts afresh",
    );
  }
  if (expect) track(ctx, entry.key, expect, picked);
  else if (picked.kind === "reverted")
    chargeWaste(ctx, entry.action?.chargeTo ?? [], picked.receipt);
  if (picked.kind === "confirmed") endSharedHold(ctx, entry.key, picked.receipt.blockNumber);
  if (picked.kind === "reverted" || picked.kind === "would-revert") endSharedHold(ctx, entry.key);
  switch (picked.kind) {
    case "confirmed": {
      const block = picked.receipt.blockNumber;
      // A transaction with no Transfer of its own (a channel's claim) landed by being mined.
      const landed = !expect || judgeLanded(ctx, expect, picked.receipt);
      const missing = `it succeeded in block ${block} without the expected Transfer`;
      return at(landed ? "landed" : "failed", picked.hash, landed ? `in block ${block}` : missing);
    }
    case "reverted":
      return at("failed", picked.hash, `it reverted in block ${picked.receipt.blockNumber}`);
    case "would-revert":
      return at(
        "failed",
        newest,
        `it left the node's pool and can no longer land: ${picked.detail}`,
      );
    case "failed":
      return at("open", picked.hash ?? newest, picked.failure.message);
    default:
      return at("open", newest, "not mined yet");
  }
}

// Answered `submitted` but can never land while the payment still can: it stays open (`dropped`
// would forget the answer, and a retry would get a second success).
async function owedAfresh(ctx: EvmContext, entry: JournalEntry): Promise<boolean> {
  const { raws, state, expect, signer } = evmEntry(entry);
  const raw = raws.at(-1);
  if (state !== "submitted" || !expect || !raw) return false;
  return stillSucceeds(ctx, signer, raw);
}

/** Ends the shared store's hold whichever replica made it (ours only tells of its own holds). */
function endSharedHold(ctx: EvmContext, key: string, landedIn?: bigint): void {
  void ctx.journal.releaseShared?.(key, landedIn)?.catch(() => undefined);
}
