/** Gas a transaction of ours without a payment wasted, charged in equal shares to whose doing it is. */
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
