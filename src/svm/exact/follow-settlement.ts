/** The reconciler's look at an open Solana settlement: resent while it can land; paid or not. */
import type { Followed } from "../../core/family.js";
import type { MaySend } from "../../core/settle-loop.js";
import type { JournalEntry } from "../../core/store.js";
import type { SvmSettleContext } from "./context.js";
import { decodeSvmTransaction } from "./decode.js";
import { resendUnseen, signatureStatuses } from "./rpc.js";
import { owedOf, type Paid, paysAtTopLevel, transferLanded } from "./transfer-landed.js";

export async function followSvmSettlement(
  ctx: SvmSettleContext,
  entry: JournalEntry,
  may: MaySend,
): Promise<Followed> {
  const signature = entry.hashes.at(-1) as string;
  const at = (outcome: Followed["outcome"], detail: string): Followed => ({
    outcome,
    network: ctx.network,
    transaction: signature,
    detail,
  });
  const [status] = await signatureStatuses(ctx.client, [signature], true);
  if (status?.confirmed) {
    if (status.err === null) {
      const unpaid = await landedUnpaid(ctx, entry, signature);
      if (unpaid) return at(unpaid.outcome, unpaid.detail);
      ctx.ledger.landed(entry.key, BigInt(status.slot));
      return at("landed", `in slot ${status.slot}`);
    }
    ctx.ledger.release(entry.key);
    return at("failed", `it failed in slot ${status.slot}`);
  }
  if (status) return at("open", "processed, not yet confirmed");
  const raw = entry.raws.at(-1);
  const decoded = raw ? decodeSvmTransaction(raw) : undefined;
  const blockhash = decoded?.ok ? decoded.transaction.recentBlockhash : undefined;
  const unseen = await resendUnseen(ctx.client, signature, blockhash, raw, may);
  if (unseen === "sent") return at("open", "sent again: the cluster had not seen it");
  if (unseen === "seen") return at("open", "seen at last; not yet confirmed");
  ctx.ledger.release(entry.key);
  return at("failed", "its blockhash expired before it landed: it took nothing");
}

/** Landed without error but unpaid (failed), or not yet shown by the node (open). */
async function landedUnpaid(
  ctx: SvmSettleContext,
  entry: JournalEntry,
  signature: string,
): Promise<Pick<Followed, "outcome" | "detail"> | undefined> {
  const paid = await landedPaid(ctx, entry, signature);
  if (paid === "paid") return undefined;
  if (paid === "unknown") {
    return {
      outcome: "open",
      detail: "landed; the node does not show it yet to confirm its transfer",
    };
  }
  ctx.ledger.release(entry.key);
  return {
    outcome: "failed",
    detail:
      "it landed without its transfer (post_settlement_transfer_not_confirmed): nothing was paid",
  };
}

/** Whether a settlement that landed without error paid (no side effects); no transfer: paid. */
export async function landedPaid(
  ctx: SvmSettleContext,
  entry: JournalEntry,
  signature: string,
): Promise<Paid> {
  if (!entry.expect) return "paid";
  const owed = owedOf(entry.expect);
  // The signed bytes are kept while it is followed; an entry at its end may hold none.
  const raw = entry.raws.at(-1);
  if (raw && paysAtTopLevel(raw, owed, ctx.feePayers)) return "paid";
  return transferLanded(ctx.client, signature, owed, ctx.feePayers);
}
