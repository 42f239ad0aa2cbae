/** The `exact` scheme on Solana: verify (settle is not implemented yet). */
export { type SvmContext, type SvmVerifyResult, verifyExactSvm } from "./verify.js";
