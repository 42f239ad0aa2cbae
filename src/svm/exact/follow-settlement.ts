/**
 * The reconciler's look at one Solana settlement written down and not at its end: its signature's
 * status now; if the cluster has none and its blockhash is still valid, the same signed bytes are
 * sent again (anyone may: the fee payer's signature is in them); once the blockhash has expired
 * with no status, it can never land. One that landed is `landed` only if it paid: a smart wallet's
 * transfer is read back from the confirmed transaction (transfer-landed.ts), never assumed.
 */
import type { Followed } from "../../core/family.js";
import type { MaySend } from "../../core/settle-loop.js";
import type { JournalEntry } from "../../core/store.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { SvmSettleContext } from "./context.js";
import { decodeSvmTransaction } from "./decode.js";
import { isBlockhashValid, sendTransaction, signatureStatuses } from "./rpc.js";
import { owedOf, type Paid, paysAtTopLevel, transferLanded } from "./transfer-landed.js";

export async function followSvmSettlement(
  ctx: SvmSettleContext,
  entry: JournalEntry,
  may: MaySend,
): Promise<Followed> {
  const network = ctx.network;
  const signature = entry.hashes.at(-1) as string;
  const [status] = await signatureStatuses(ctx.client, [signature], true);
  const final =
    status?.confirmationStatus === "confirmed" || status?.confirmationStatus === "finalized";
  if (status && final) {
    if (status.err === null) {
      const unpaid = await landedUnpaid(ctx, entry, signature);
      if (unpaid) return { ...unpaid, network, transaction: signature };
      ctx.ledger.landed(entry.key, BigInt(status.slot));
      return {
        outcome: "landed",
        network,
        transaction: signature,
        detail: `in slot ${status.slot}`,
      };
    }
    ctx.ledger.release(entry.key);
    return {
      outcome: "failed",
      network,
      transaction: signature,
      detail: `it failed in slot ${status.slot}`,
    };
  }
  if (status)
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "processed, not yet confirmed",
    };
  const raw = entry.raws.at(-1);
  const decoded = raw ? decodeSvmTransaction(raw) : undefined;
  const blockhash = decoded?.ok ? decoded.transaction.recentBlockhash : undefined;
  if (raw && blockhash && (await isBlockhashValid(ctx.client, blockhash))) {
    await sendTransaction(ctx.client, raw, may).catch((error: unknown) => {
      if (isUnreachable(error)) throw error;
    });
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "sent again: the cluster had not seen it",
    };
  }
  // Its blockhash expired: it landed by now or never will.
  const [late] = await signatureStatuses(ctx.client, [signature], true);
  if (late)
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "seen at last; not yet confirmed",
    };
  ctx.ledger.release(entry.key);
  return {
    outcome: "failed",
    network,
    transaction: signature,
    detail: "its blockhash expired before it landed: it took nothing",
  };
}

/**
 * Landed without error, but did it pay? Its own top-level transfer says so at once (the static
 * layout's payments); otherwise (a smart wallet's, or accounts from lookup tables) the confirmed
 * transaction is read: one without the transfer failed (it took nothing from the payer), one the
 * node does not show yet stays open.
 */
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

/**
 * Whether a settlement that landed without error paid what it owed (no side effects: the
 * reconciler and a status query both ask). An entry that names no transfer counts as paid.
 */
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
