/** The `exact` scheme on Solana: verify and settle, loaded only for Solana payments. */
export type { SvmContext, SvmSettleContext } from "./context.js";
export { settleExactSvm } from "./settle.js";
export { type SvmVerifyResult, verifyExactSvm } from "./verify.js";
