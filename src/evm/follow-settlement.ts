/**
 * The reconciler's look at one EVM settlement written down and not at its end, whatever its
 * scheme: what the chain says of its transaction now (mined, reverted, still pending, or gone),
 * sent again if it was dropped and its nonce is free and this process holds the key. A payment
 * landed when its receipt carries its Transfer; a transaction without one of its own (a channel
 * action, a scheme's own) when it was mined without reverting. The ledger and the gas at risk hear
 * the outcome as they would from a settle; at its end the payer's hold in a shared store ends
 * too, whichever replica made it.
 */
import type { Followed } from "../core/family.js";
import type { MaySend } from "../core/settle-loop.js";
import type { JournalEntry } from "../core/store.js";
import { caip2 } from "../protocol/networks.js";
import { evmEntry } from "./chain/entry.js";
import { reconcile } from "./chain/reconcile.js";
import { stillSucceeds } from "./chain/signers.js";
import { chargeWaste } from "./chain/waste.js";
import type { EvmContext } from "./context.js";
import { judgeLanded, track } from "./exact/judge.js";

/** A reconciler's pass does not wait long for any one transaction: the next pass looks again. */
const FOLLOW_MS = 5_000;

export async function followSettlement(
  ctx: EvmContext,
  entry: JournalEntry,
  may: MaySend,
): Promise<Followed> {
  const network = caip2(ctx.chainId);
  const newest = entry.hashes.at(-1);
  const expect = evmEntry(entry).expect;
  const waiting = { ...ctx, confirmTimeoutMs: Math.min(ctx.confirmTimeoutMs, FOLLOW_MS) };
  // The reconciler follows what was sent outside any dry run: it may send the same bytes again.
  const picked = await reconcile(waiting, entry, may);
  if (picked === "gone" && (await owedAfresh(ctx, entry))) {
    return {
      outcome: "open",
      network,
      transaction: newest,
      detail:
        "answered submitted, but its nonce went to another transaction, so it can never land; the payment's retry settles it afresh (answered nonce_already_used, not a second success)",
    };
  }
  if (picked === "gone") {
    ctx.inflight.release(entry.key);
    endSharedHold(ctx, entry.key);
    return {
      outcome: "dropped",
      network,
      transaction: newest,
      detail:
        "its nonce went to another transaction, so it can never land; a settle of the payment starts afresh",
    };
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
      if (!expect || judgeLanded(ctx, expect, picked.receipt)) {
        return {
          outcome: "landed",
          network,
          transaction: picked.hash,
          detail: `in block ${block}`,
        };
      }
      return {
        outcome: "failed",
        network,
        transaction: picked.hash,
        detail: `it succeeded in block ${block} without the expected Transfer`,
      };
    }
    case "reverted":
      return {
        outcome: "failed",
        network,
        transaction: picked.hash,
        detail: `it reverted in block ${picked.receipt.blockNumber}`,
      };
    case "would-revert":
      return {
        outcome: "failed",
        network,
        transaction: newest,
        detail: `it left the node's pool and can no longer land: ${picked.detail}`,
      };
    case "failed":
      return {
        outcome: "open",
        network,
        transaction: picked.hash ?? newest,
        detail: picked.failure.message,
      };
    default:
      return { outcome: "open", network, transaction: newest, detail: "not mined yet" };
  }
}

/**
 * A success was handed over (`submitted`) for a transaction that can never land, and the payment
 * can still be made: it stays open (a `dropped` record would forget the answer, and its retry
 * would be answered a second success) and keeps its hold until a retry settles it afresh.
 */
async function owedAfresh(ctx: EvmContext, entry: JournalEntry): Promise<boolean> {
  const { raws, state, expect, signer } = evmEntry(entry);
  const raw = raws.at(-1);
  if (state !== "submitted" || !expect || !raw) return false;
  return stillSucceeds(ctx, signer, raw);
}

/**
 * The shared store's copy of the payer's hold ends with the settlement (landed in a block, or
 * spending nothing), whichever replica made it: the ledger here tells the store only of holds it
 * made itself, so one made by another replica, or by a run killed mid-settle, would be left held.
 */
function endSharedHold(ctx: EvmContext, key: string, landedIn?: bigint): void {
  void ctx.journal.releaseShared?.(key, landedIn)?.catch(() => undefined);
}
