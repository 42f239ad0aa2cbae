/**
 * What a claim's rows would do on chain, read before anything is signed or sent. A row at or below
 * what its channel already claimed (a channel never opened among them) moves nothing: the contract
 * returns early, so it passes every simulation and would cost us a transaction for a no-op.
 */
import { decodeFunctionResult, encodeFunctionData, type Hex } from "viem";
import type { Failure } from "../../protocol/errors.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { channelIdOf, readViews } from "./channel.js";
import { SETTLEMENT_ABI } from "./constants.js";
import type { VoucherClaim } from "./payload.js";
import { rejected } from "./reasons.js";

/** Channels read in one call (readViews). */
const READ_CHUNK = 200;

/** Each distinct channel's claimed total, by id, in as few calls as there are chunks. */
async function claimedTotals(ctx: EvmContext, ids: readonly Hex[]): Promise<Map<Hex, bigint>> {
  const totals = new Map<Hex, bigint>();
  for (let start = 0; start < ids.length; start += READ_CHUNK) {
    const chunk = ids.slice(start, start + READ_CHUNK);
    const results = await readViews(
      ctx,
      chunk.map((id) =>
        encodeFunctionData({ abi: SETTLEMENT_ABI, functionName: "channels", args: [id] }),
      ),
    );
    chunk.forEach((id, i) => {
      const [, totalClaimed] = decodeFunctionResult({
        abi: SETTLEMENT_ABI,
        functionName: "channels",
        data: results[i] as Hex,
      });
      totals.set(id, totalClaimed);
    });
  }
  return totals;
}

/**
 * The rows that would raise their channel's claimed total, or why none would (or the chain could
 * not be read). Rows we sign keep only those; a seller-signed claim is sent whole or not at all,
 * since its signature covers every row.
 */
export async function rowsThatMove(
  ctx: EvmContext,
  rows: readonly VoucherClaim[],
): Promise<{ ok: true; rows: VoucherClaim[] } | { ok: false; failure: Failure }> {
  const ids = rows.map((row) => channelIdOf(row.voucher.channel, ctx.chainId));
  let totals: Map<Hex, bigint>;
  try {
    totals = await claimedTotals(ctx, [...new Set(ids)]);
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the claimed channels") };
  }
  const moving = rows.filter((row, i) => row.totalClaimed > (totals.get(ids[i] as Hex) ?? 0n));
  if (moving.length > 0) return { ok: true, rows: moving };
  const first = rows[0];
  const already = totals.get(ids[0] as Hex) ?? 0n;
  return {
    ok: false,
    failure: rejected(
      "nothing_to_settle",
      "nothing_to_settle",
      rows.length === 1 && first
        ? `nothing to claim: channel ${ids[0]} has ${already} claimed already${already === 0n ? " (it was never opened, or nothing was claimed yet)" : ""}, and this claim's total is ${first.totalClaimed}`
        : `nothing to claim: none of the ${rows.length} rows raises its channel's claimed total`,
    ),
  };
}
