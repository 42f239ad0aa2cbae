/**
 * A node's refusal that says nothing about the payment (nonce too high from a node behind a
 * balancer, the pool full, a minimum tip, a rate limit in a JSON-RPC error) is not the payment's
 * failure: the same nonce is sent again after a short wait, within the settle's time. The same
 * bytes, or for a tip too low the same nonce with raised fees, written down first as a
 * replacement: at most one transaction at a nonce can land, so nothing is paid twice.
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

/** One refusal on the way, as the node put it. */
export interface Refused {
  readonly kind: Refusal;
  readonly text: string;
}

/** Waits before each re-send; there are as many re-sends as waits, within the settle's time. */
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

/**
 * Broadcasts `issued`; on a refusal not about the payment, waits and sends the same nonce again
 * (each refusal noted in `refused`), until `deadline`. Throws the last refusal otherwise.
 */
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

/** The same nonce signed again with raised fees, written down as a replacement; none over the cap. */
async function raisedFees(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  issued: Issued,
): Promise<Issued | undefined> {
  const fees = bump(feesOf(issued.tx));
  if (overCap(ctx, issued.tx.gas ?? 0n, fees)) return undefined;
  const tx = { ...issued.tx, ...fees } as TransactionSerializable;
  const raw = await lane.account.signTransaction(tx);
  const hash = keccak256Hex(bytesOfHex(raw));
  await ctx.journal.recordReplace(key, hash, raw);
  lane.remember(ctx.chainId, issued.nonce, raw);
  return { hash, nonce: issued.nonce, tx, raw };
}
