/** A smart wallet at settle: a retry finds it in the journal; success waits for its transfer. */
import { failure } from "../../protocol/errors.js";
import type { SettleResult } from "../../protocol/results.js";
import { TOKEN_PROGRAM } from "./constants.js";
import type { SvmSettleContext } from "./context.js";
import type { SvmTransaction } from "./decode.js";
import { POST_SETTLEMENT_NOT_CONFIRMED } from "./reasons.js";
import { signAsFeePayer } from "./settlement-key.js";
import { smartWalletPayment } from "./smart-wallet.js";
import { owedOf, transferLanded } from "./transfer-landed.js";
import type { SvmPayment } from "./types.js";

/** A smart wallet's failed-simulation transaction we sent: the payment as journaled, to follow. */
export async function journaledSmartWallet(
  ctx: SvmSettleContext,
  tx: SvmTransaction,
): Promise<SvmPayment | undefined> {
  const signed = signAsFeePayer(ctx.network, tx, ctx.keys);
  if (!signed) return undefined;
  const entry = await ctx.journal.get(signed.key);
  if (!entry?.expect) return undefined;
  // The journal keeps the accounts, not the wallet that authorised the transfer.
  const kept = { ...owedOf(entry.expect), source: entry.expect.from, authority: "" };
  return smartWalletPayment(tx, { ...kept, programId: TOKEN_PROGRAM });
}

/** A landed smart wallet's answer unless it paid: failed (no transfer) or pending (unread). */
export async function smartWalletUnpaid(
  ctx: SvmSettleContext,
  payment: SvmPayment,
  signature: string,
): Promise<Extract<SettleResult, { ok: false }> | undefined> {
  const paid = await transferLanded(ctx.client, signature, payment, ctx.feePayers);
  if (paid === "paid") return undefined;
  const refused =
    paid === "unknown"
      ? failure(
          "settlement_pending",
          "the transaction landed, and the node does not show it yet to confirm its transfer; retry to follow it (it is never sent twice)",
        )
      : failure(
          "settlement_failed",
          `the transaction landed without the transfer its simulation showed (${payment.amount} of ${payment.mint} to ${payment.destination}): nothing was paid, and the payer must sign a new payment`,
          { x402Reason: POST_SETTLEMENT_NOT_CONFIRMED },
        );
  return { ok: false, payer: payment.payer, transactionHash: signature, failure: refused };
}
