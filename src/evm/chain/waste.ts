/**
 * Gas a transaction of ours wasted without a payment of its own (a channel's claim, settle or
 * refund that reverted), charged in equal shares to those whose doing it is: each share counts
 * against its payer, its asset and the chain's wasted-gas budget, as a payment's revert does.
 */
import type { TransactionReceipt } from "viem";
import type { Chargeable } from "../../core/store.js";
import type { GasAtRisk } from "./gas-at-risk.js";

export function chargeWaste(
  ctx: { readonly chainId: number; readonly gasAtRisk: GasAtRisk },
  chargeTo: readonly Chargeable[],
  receipt: TransactionReceipt,
): void {
  if (chargeTo.length === 0) return;
  const share = receipt.gasUsed / BigInt(chargeTo.length);
  for (const { payer, asset } of chargeTo) {
    ctx.gasAtRisk.charge(ctx.chainId, { payer, asset, gas: share, cause: "reverted" });
  }
}
