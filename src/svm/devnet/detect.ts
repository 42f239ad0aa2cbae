/** Is an RPC's cluster our devnet? Yes when devnet USDC has our mint authority (Circle's has its own). */
import type { SvmMint } from "../client/sign-payment.js";
import { svmDevKey } from "./keys.js";
import { DEFAULT_PAYER_COUNT, DEVNET_USDC_MINT, devnetKeys } from "./setup.js";

export { DEFAULT_PAYER_COUNT, DEVNET_USDC_MINT } from "./setup.js";

/** Whether this mint, read from a cluster, is the devnet's test USDC. */
export function isSvmDevnetMint(mint: SvmMint): boolean {
  return (
    mint.address === DEVNET_USDC_MINT && mint.mintAuthority === svmDevKey("mint-authority").address
  );
}

/** The devnet's fee payer, payee and payers (as `facilitator devnet --svm` funds them). */
export function svmDevnetRoles() {
  return devnetKeys(DEFAULT_PAYER_COUNT);
}
