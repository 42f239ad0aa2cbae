/** Gas estimates reused across settles by key (calls that cost the same each time); reusers simulate. */
import { setNewest } from "../../core/newest.js";

const gasEstimates = new Map<string, { at: number; gas: bigint }>();
/** Keys name a chain, an asset and a signature size: few in practice, bounded all the same. */
const GAS_ESTIMATES_KEPT = 4096;
const GAS_ESTIMATE_MS = 10 * 60_000;
/** Reused estimates get 50 % headroom: a new recipient's first balance costs about 15k more. */
const REUSED_GAS_PERCENT = 150n;
/** Fresh estimates get 20 %. */
const GAS_HEADROOM_PERCENT = 120n;

/** Whether a settle under `gasKey` would reuse an estimate (and so must simulate first). */
export function hasGasEstimate(gasKey: string): boolean {
  const entry = gasEstimates.get(gasKey);
  return entry !== undefined && Date.now() - entry.at < GAS_ESTIMATE_MS;
}

/** The gas limit to send with under `gasKey`, if an estimate may be reused. */
export function reusedGasLimit(gasKey: string | undefined): bigint | undefined {
  const entry = gasKey && hasGasEstimate(gasKey) ? gasEstimates.get(gasKey) : undefined;
  return entry && (entry.gas * REUSED_GAS_PERCENT) / 100n;
}

/** Remembers a fresh estimate and returns the gas limit to send with. */
export function gasLimitFrom(estimate: bigint, gasKey: string | undefined): bigint {
  if (gasKey)
    setNewest(gasEstimates, gasKey, { at: Date.now(), gas: estimate }, GAS_ESTIMATES_KEPT);
  return (estimate * GAS_HEADROOM_PERCENT) / 100n;
}

/** A settlement reverted: it may have run out of gas on a reused estimate, so estimate afresh. */
export function forgetGasEstimates(): void {
  gasEstimates.clear();
}
