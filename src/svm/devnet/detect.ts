/**
 * Is the Solana cluster behind an RPC our devnet? Yes when the devnet's test USDC mint (at the
 * Solana devnet USDC address) has the devnet's mint authority: Circle's real devnet USDC has its
 * own, and no key of ours can mint it. Like the EVM devnet's check, it needs no file from the
 * devnet (any devnet, any port, also one a test started).
 */
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
  const { feePayer, payee, payers } = devnetKeys(DEFAULT_PAYER_COUNT);
  return { feePayer, payee, payers };
}
