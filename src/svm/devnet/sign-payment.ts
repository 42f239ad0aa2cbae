/** The devnet's request-svm.json: a payment in test USDC signed as the official client signs it. */
import {
  latestBlockhash,
  signSvmTransfer,
  svmCallTo,
  svmPaymentPayload,
} from "../client/sign-payment.js";
import type { SvmDevnet } from "./index.js";
import { type SvmDevKey, secretKeyBytes } from "./keys.js";
import { TOKEN_PROGRAM } from "./token-layout.js";

/** What signing needs of a devnet (one in another process too: its keys are well known). */
export type SvmDevnetParts = Pick<SvmDevnet, "rpcUrl" | "network" | "feePayer" | "payee" | "mint">;

/** A request file body (reference dialect, x402 v2) in test USDC: `{ payload, requirements }`. */
export async function signSvmSampleRequest(
  devnet: SvmDevnetParts,
  payer: SvmDevKey,
  /** amount: token units (default 10,000: 0.01 USDC). */
  options: { readonly amount?: bigint; readonly resource?: string } = {},
) {
  const amount = options.amount ?? 10_000n;
  const feePayer = devnet.feePayer.address;
  const { address, decimals } = devnet.mint;
  const { transaction } = await signSvmTransfer({
    payerSecretKey: secretKeyBytes(payer),
    feePayer,
    // The devnet's mint is known: no need to read it back.
    mint: { address, tokenProgram: TOKEN_PROGRAM, decimals, mintAuthority: undefined },
    payTo: devnet.payee.address,
    amount,
    blockhash: await latestBlockhash(svmCallTo(devnet.rpcUrl)),
  });
  const requirements = {
    scheme: "exact",
    network: devnet.network,
    amount: amount.toString(),
    asset: address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: { feePayer },
  };
  const payload = svmPaymentPayload(2, requirements, transaction, {
    url: options.resource ?? "http://localhost:4021/weather",
  });
  return { payload, requirements };
}
