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
  readonly approval?: boolean | undefined;
  readonly payerKeyFile?: string | undefined;
  readonly payer?: string | undefined;
  readonly feePayer?: string | undefined;
  readonly validFor?: string | undefined;
  readonly scheme?: PayScheme | undefined;
  readonly deposit?: string | undefined;
  readonly cumulative?: string | undefined;
  readonly receiverAuthorizer?: string | undefined;
  readonly claim?: readonly string[] | undefined;
  readonly sweep?: boolean | undefined;
  readonly refund?: string | undefined;
  readonly x402?: boolean | undefined;
  readonly v1?: boolean | undefined;
  readonly quiet?: boolean | undefined;
}
