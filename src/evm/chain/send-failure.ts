/** What a broadcast's failure means: sent after all, next nonce, price again, or an outcome. */
import { failure } from "../../protocol/errors.js";
import { isUnreachable, neverReachedNode } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";
import { refusal } from "./broadcast.js";
import {
  type CallOutcome,
  failed,
  infrastructure,
  nodeSaid,
  pending,
  shortText,
} from "./outcome.js";
import { type Issued, type Refused, refusalsSaid } from "./resend.js";
import { isRevert, revertReason } from "./revert.js";
import type { SignerLane } from "./signers.js";

export type Sent =
  | { readonly kind: "sent"; readonly issued: Issued }
  | { readonly kind: "retry" }
  /** Refused for a max fee below the next block's base fee: priced again, once. */
  | { readonly kind: "reprice" }
  | { readonly kind: "outcome"; readonly outcome: CallOutcome };

export function wouldRevert(error: unknown): CallOutcome {
  return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
}

export function sendFailure(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  error: unknown,
  issued: Issued,
  refused: Refused[],
): { consumed: boolean; value: Sent } {
  const outcome = (o: CallOutcome, consumed = false) => ({
    consumed,
    value: { kind: "outcome", outcome: o } as Sent,
  });
  if (neverReachedNode(error)) {
    void ctx.journal.recordState(key, "failed").catch(() => undefined);
    lane.forget(ctx.chainId);
    // Refused before the node: not sent; the payment is free to be settled again.
    return outcome(infrastructure(error, "broadcasting, nothing was sent"));
  }
  if (isUnreachable(error)) {
    // The node may have taken it before the connection broke: keep the hash, never re-send.
    lane.observe(ctx.chainId, issued.nonce);
    return outcome(
      pending(
        issued.hash,
        `the broadcast's answer was lost (${shortText(error)}); the transaction may be pending`,
      ),
      true,
    );
  }
  const kind = refusal(error);
  switch (kind) {
    case "known":
      lane.observe(ctx.chainId, issued.nonce);
      return { consumed: true, value: { kind: "sent", issued } };
    case "nonce":
      refused.push({ kind, text: nodeSaid(error) });
      // Someone else holds this nonce: re-read, past it and past those handed out meanwhile.
      lane.refresh(ctx.chainId);
      lane.observe(ctx.chainId, issued.nonce);
      return { consumed: true, value: { kind: "retry" } };
    case "fee":
      return { consumed: false, value: { kind: "reprice" } };
    default: {
      void ctx.journal.recordState(key, "failed").catch(() => undefined);
      if (isRevert(error)) return outcome(wouldRevert(error));
      if (kind === "other") {
        return outcome(infrastructure(error, "the node refused the transaction"));
      }
      refused.push({ kind, text: nodeSaid(error) });
      const why = `the node did not take the transaction, re-sent as long as the settle allows (${refusalsSaid(refused)}); nothing of this payment was taken, try again`;
      const retry = { status: 500, retryAfterSeconds: 2, refusal: kind };
      return outcome(failed(failure("settlement_failed", why, retry)));
    }
  }
}
