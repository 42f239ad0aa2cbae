/**
 * A refusal that says nothing of the payment (pool full, tip, rate limit...) re-sends the same
 * nonce after a short wait: same bytes, or raised fees journaled as a replacement (one can land).
 */
import type { Hex, TransactionReceipt, TransactionSerializable } from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import { isUnreachable } from "../../rpc/rpc.js";
import { bytesOfHex } from "./abi-words.js";
import type { ChainAccess } from "./access.js";
import { broadcast, type Refusal, refusal } from "./broadcast.js";
import { bump, feesOf, overCap } from "./fees.js";
import { keccak256Hex } from "./keccak.js";
import { nodeSaid } from "./outcome.js";
import type { SignerLane } from "./signers.js";

export type Issued = { hash: Hex; nonce: number; tx: TransactionSerializable; raw: Hex };

export type Refused = { readonly kind: Refusal; readonly text: string };

/** Waits before each re-send, within the settle's time. */
const RESEND_WAITS_MS = [200, 500, 1_000, 2_000, 4_000];
const TRANSIENT: ReadonlySet<Refusal> = new Set(["nonce-ahead", "tip", "pool", "rate"]);

/** The refusals of a settle in a few words, for its answer: "txpool is full (pool), twice". */
export function refusalsSaid(refused: readonly Refused[]): string {
  const counts = new Map<string, number>();
  for (const r of refused) {
    const said = `${r.text} (${r.kind})`;
    counts.set(said, (counts.get(said) ?? 0) + 1);
  }
  return [...counts].map(([said, n]) => (n > 1 ? `${said} ×${n}` : said)).join("; ");
}

/** Broadcasts `issued`, re-sending on transient refusals (noted in `refused`) until `deadline`. */
export async function broadcastResending(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  issued: Issued,
  wantReceipt: boolean,
  deadline: number,
  refused: Refused[],
  may: MaySend,
): Promise<{ receipt: TransactionReceipt | undefined; issued: Issued }> {
  let current = issued;
  for (let attempt = 0; ; attempt++) {
    try {
      const receipt = await broadcast(ctx, current.raw, current.hash, wantReceipt, may, deadline);
      return { receipt, issued: current };
    } catch (error) {
      const kind = isUnreachable(error) ? "other" : refusal(error);
      const wait = RESEND_WAITS_MS[attempt];
      if (!TRANSIENT.has(kind) || wait === undefined || Date.now() + wait >= deadline) throw error;
      refused.push({ kind, text: nodeSaid(error) });
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (kind === "tip") {
        const raised = await raisedFees(ctx, lane, key, current);
        if (!raised) throw error;
        current = raised;
      }
    }
  }
}

/** The same nonce with raised fees, journaled as a replacement; none over the cap. */
async function raisedFees(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  issued: Issued,
): Promise<Issued | undefined> {
  const fees = bump(feesOf(issued.tx));
  if (overCap(ctx, issued.tx.gas ?? 0n, fees)) return undefined;
  const tx = { ...issued.tx, ...fees } as TransactionSerializable;
  return { ...(await signReplacement(ctx, lane, key, tx)), nonce: issued.nonce, tx };
}

/** Signs `tx` at its nonce and journals it as a replacement before it may be sent. */
export async function signReplacement(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  tx: TransactionSerializable,
): Promise<{ hash: Hex; raw: Hex }> {
  const raw = await lane.account.signTransaction(tx);
  const hash = keccak256Hex(bytesOfHex(raw));
  await ctx.journal.recordReplace(key, hash, raw);
  if (tx.nonce !== undefined) lane.remember(ctx.chainId, tx.nonce, raw);
  return { hash, raw };
}
