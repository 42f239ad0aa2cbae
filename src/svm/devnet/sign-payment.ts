/** The devnet's request-svm.json: a payment in test USDC signed as the official client signs it. */
import {
  fetchSvmCall,
  latestBlockhash,
  signSvmTransfer,
  svmPaymentPayload,
} from "../client/sign-payment.js";
import type { SvmDevnet } from "./index.js";
import { type SvmDevKey, secretKeyBytes } from "./keys.js";
import { TOKEN_PROGRAM } from "./token-layout.js";

/** What signing needs of a devnet (one in another process too: its keys are well known). */
export type SvmDevnetParts = Pick<SvmDevnet, "rpcUrl" | "network" | "feePayer" | "payee" | "mint">;

/** x402 v2 requirements for the devnet's test USDC, the devnet's fee payer in `extra`. */
export function svmSampleRequirements(devnet: SvmDevnetParts, amount = 10_000n) {
  return {
    scheme: "exact",
    network: devnet.network,
    amount: amount.toString(),
    asset: devnet.mint.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: { feePayer: devnet.feePayer.address },
  };
}

/** A request file body (reference dialect, x402 v2): `{ payload, requirements }`. */
export async function signSvmSampleRequest(
  devnet: SvmDevnetParts,
  payer: SvmDevKey,
  /** amount: token units (default 10,000: 0.01 USDC). */
  options: { readonly amount?: bigint; readonly resource?: string } = {},
) {
  const amount = options.amount ?? 10_000n;
  const requirements = svmSampleRequirements(devnet, amount);
  const { transaction } = await signSvmTransfer({
    payerSecretKey: secretKeyBytes(payer),
    feePayer: devnet.feePayer.address,
    // The devnet's mint is known: no need to read it back.
    mint: {
      address: devnet.mint.address,
      tokenProgram: TOKEN_PROGRAM,
      decimals: devnet.mint.decimals,
      mintAuthority: undefined,
    },
    payTo: devnet.payee.address,
    amount,
    lifetime: await latestBlockhash(fetchSvmCall(devnet.rpcUrl)),
  });
  const payload = svmPaymentPayload(2, requirements, transaction, {
    url: options.resource ?? "http://localhost:4021/weather",
  });
  return { payload, requirements };
}
