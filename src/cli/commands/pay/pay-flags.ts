/** The flags of `facilitator pay`, shared by its EVM and Solana halves. */
import type { TransferMethod } from "../../../evm/client/sign-payment.js";
import type { ConfigFlags } from "../../settings/config.js";
import type { PayScheme } from "./pay-requirements.js";

export interface PayFlags extends ConfigFlags {
  readonly requirements?: string | undefined;
  readonly amount?: string | undefined;
  readonly to?: string | undefined;
  readonly asset?: string | undefined;
  readonly network?: string | undefined;
  readonly method?: TransferMethod | undefined;
  /** Permit2: send the payer's approval as a signed approve transaction, not an EIP-2612 permit. */
  readonly approval?: boolean | undefined;
  readonly payerKeyFile?: string | undefined;
  readonly payer?: string | undefined;
  /** Solana: the facilitator's fee payer (`extra.feePayer`). */
  readonly feePayer?: string | undefined;
  readonly validFor?: string | undefined;
  /** exact (the default) or batch-settlement. */
  readonly scheme?: PayScheme | undefined;
  /** batch-settlement: deposit this much (token units) now, whatever the channel holds. */
  readonly deposit?: string | undefined;
  /** batch-settlement: the voucher's cumulative amount (token units), when vouchers are outstanding. */
  readonly cumulative?: string | undefined;
  /** batch-settlement: the seller's receiver authorizer, when the requirements do not say. */
  readonly receiverAuthorizer?: string | undefined;
  /** batch-settlement, as the seller: claim the vouchers in these requests (- for stdin). */
  readonly claim?: readonly string[] | undefined;
  /** batch-settlement, as the seller: sweep what the receiver claimed to it. */
  readonly sweep?: boolean | undefined;
  /** batch-settlement, as the seller: refund the channel of the voucher in this request. */
  readonly refund?: string | undefined;
  readonly x402?: boolean | undefined;
  readonly v1?: boolean | undefined;
  readonly quiet?: boolean | undefined;
}
