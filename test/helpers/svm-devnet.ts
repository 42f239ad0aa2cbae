/**
 * Test fixtures for the Solana devnet: payloads made by the official x402 SVM client
 * (@x402/svm) and the official SVM facilitator, both pointed at the devnet's RPC.
 */
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as ExactSvmClient } from "@x402/svm/exact/client";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import {
  associatedTokenAddress,
  type SvmDevKey,
  type SvmDevnet,
  secretKeyBytes,
} from "../../src/svm/devnet/index.js";
import { type BuildOptions, buildPayment } from "./svm-build.js";

/** x402 v2 PaymentRequirements for the devnet's test USDC, with our fee payer. */
export function svmRequirementsV2(
  devnet: SvmDevnet,
  overrides: { amount?: string; payTo?: string; asset?: string; feePayer?: string } = {},
) {
  return {
    scheme: "exact",
    network: devnet.network,
    amount: overrides.amount ?? "10000",
    asset: overrides.asset ?? devnet.mint.address,
    payTo: overrides.payTo ?? devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: { feePayer: overrides.feePayer ?? devnet.feePayer.address },
  };
}

/** Signs a payment with the official SVM client, as a real buyer would, against the devnet. */
export async function svmClientPayload(
  devnet: SvmDevnet,
  payer: SvmDevKey,
  requirements: ReturnType<typeof svmRequirementsV2>,
) {
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(payer));
  // Spend controls only allow well-known assets; keep the client's checks to the scheme's own.
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new ExactSvmClient(signer, { rpcUrl: devnet.rpcUrl }));
  const paymentRequired = {
    x402Version: 2,
    resource: { url: "http://localhost/paid" },
    accepts: [requirements],
  };
  // biome-ignore lint/suspicious/noExplicitAny: the client's types are version-specific unions.
  return client.createPaymentPayload(paymentRequired as any);
}

/** The official SVM facilitator (x402 SDK 2.27) with `feePayer` as its signer, on the devnet. */
export async function referenceSvmFacilitator(
  devnet: SvmDevnet,
  feePayer: SvmDevKey = devnet.feePayer,
) {
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(feePayer));
  const facilitator = new x402Facilitator();
  facilitator.register(
    devnet.network,
    new ExactSvmFacilitator(toFacilitatorSvmSigner(signer, { defaultRpcUrl: devnet.rpcUrl })),
  );
  return facilitator;
}

/** A JSON-RPC call to the devnet, answering the parsed body. */
export async function svmRpc(devnet: SvmDevnet, method: string, params: unknown[] = []) {
  const response = await fetch(devnet.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
}

/**
 * A payment in the official client's layout with any part changed (test/helpers/svm-build.ts),
 * signed by `from` on the devnet's latest blockhash, with requirements for what it pays.
 */
export async function devnetPayment(
  devnet: SvmDevnet,
  from: SvmDevKey,
  amount: bigint,
  options: Omit<Partial<BuildOptions>, "payer" | "amount" | "blockhash"> = {},
) {
  const answer = await svmRpc(devnet, "getLatestBlockhash", [{ commitment: "confirmed" }]);
  const blockhash = (answer.result as { value: { blockhash: string } }).value.blockhash;
  const requirements = svmRequirementsV2(devnet, { amount: amount.toString() });
  const transaction = await buildPayment({
    feePayer: devnet.feePayer.address,
    mint: devnet.mint.address,
    payTo: devnet.payee.address,
    ...options,
    payer: await createKeyPairSignerFromBytes(secretKeyBytes(from)),
    amount,
    blockhash,
  });
  return {
    payload: { x402Version: 2, accepted: requirements, payload: { transaction } },
    requirements,
  };
}

type Commitment = "processed" | "confirmed" | "finalized";

/** Token units in `owner`'s associated account for the devnet's USDC (or `token`'s mint). */
export async function svmTokenBalance(
  devnet: SvmDevnet,
  owner: string,
  commitment: Commitment = "processed",
  token?: { readonly mint: string; readonly program: string },
): Promise<bigint> {
  type Arg = Parameters<typeof associatedTokenAddress>[0];
  const ata = token
    ? await associatedTokenAddress(owner as Arg, token.mint as Arg, token.program as Arg)
    : await associatedTokenAddress(owner as Arg);
  const { result, error } = await svmRpc(devnet, "getTokenAccountBalance", [ata, { commitment }]);
  if (error) throw new Error(`getTokenAccountBalance: ${error.message}`);
  return BigInt((result as { value: { amount: string } }).value.amount);
}

/** `owner`'s SOL, in lamports. */
export async function svmLamports(
  devnet: SvmDevnet,
  owner: string,
  commitment: Commitment = "processed",
): Promise<bigint> {
  const { result, error } = await svmRpc(devnet, "getBalance", [owner, { commitment }]);
  if (error) throw new Error(`getBalance: ${error.message}`);
  return BigInt((result as { value: number | string }).value);
}
