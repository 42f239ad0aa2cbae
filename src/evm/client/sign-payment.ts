/** An x402 buyer's `exact` payment (EIP-3009 or Permit2), signed by the official @x402/evm client. */
import type { ClientEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import type { PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEFAULT_RESOURCE, type RequirementsJson } from "../../protocol/client-request.js";
import type { DevAccount } from "../devnet/accounts.js";

export type TransferMethod = "eip3009" | "permit2";

export { DEFAULT_RESOURCE, type RequirementsJson };

interface SignPaymentOptions {
  readonly chainId: number;
  readonly x402Version: 1 | 2;
  /** Their extra carries the token's EIP-712 name and version. */
  readonly requirements: RequirementsJson;
  /** The amount in atomic units (the requirements' `amount` or `maxAmountRequired`). */
  readonly amount: bigint;
  readonly method: TransferMethod;
  /** Seconds the authorization stays valid (default: the requirements' maxTimeoutSeconds). */
  readonly validForSeconds?: number;
  /** Permit2 only: also sign the payer's EIP-2612 permit for Permit2, at this permit nonce. */
  readonly eip2612Nonce?: bigint | undefined;
  /** Permit2 only: carry the payer's signed approve(Permit2) transaction at this nonce and fees. */
  readonly approval?: Awaited<ReturnType<typeof approvalTerms>> | undefined;
}

/** The payer as the official client's signer; its chain reads answer so it sponsors as asked. */
function payerSigner(payer: DevAccount, options: SignPaymentOptions): ClientEvmSigner {
  const account = privateKeyToAccount(payer.privateKey);
  const { approval, eip2612Nonce } = options;
  return {
    address: account.address,
    signTypedData: (message) => account.signTypedData(message as never),
    readContract: async ({ functionName }) => (functionName === "allowance" ? 0n : eip2612Nonce),
    signTransaction: (transaction) => account.signTransaction(transaction),
    getTransactionCount: async () => approval?.nonce ?? 0,
    ...(approval ? { estimateFeesPerGas: async () => approval } : {}),
  };
}

/** Signs the payment and returns the x402 PaymentPayload (v1 or v2). */
export async function signPayment(payer: DevAccount, options: SignPaymentOptions) {
  const { requirements, x402Version, method } = options;
  if (method === "permit2" && x402Version !== 2)
    throw new Error("Permit2 payments are x402 v2 only");
  const extension = options.approval
    ? "erc20ApprovalGasSponsoring"
    : options.eip2612Nonce !== undefined
      ? "eip2612GasSponsoring"
      : undefined;
  // Signed as v2 on the chain's CAIP-2 id; a v1 payload carries the same authorization.
  const { payload, extensions } = await new ExactEvmScheme(
    payerSigner(payer, options),
  ).createPaymentPayload(
    2,
    {
      scheme: "exact",
      network: `eip155:${options.chainId}`,
      asset: requirements.asset,
      payTo: requirements.payTo,
      amount: options.amount.toString(),
      maxTimeoutSeconds: options.validForSeconds ?? requirements.maxTimeoutSeconds ?? 300,
      extra: { ...requirements.extra, assetTransferMethod: method },
    },
    { extensions: extension ? { [extension]: {} } : {} },
  );
  if (x402Version === 1) {
    return { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload };
  }
  const resource = DEFAULT_RESOURCE;
  return method === "eip3009"
    ? { x402Version: 2, resource, accepted: requirements, payload }
    : {
        x402Version: 2,
        payload,
        ...(extensions ? { extensions } : {}),
        resource,
        accepted: requirements,
      };
}

/** The request body verify and settle read, in either dialect. */
export function requestBody(
  dialect: "reference" | "x402",
  x402Version: 1 | 2,
  payload: unknown,
  requirements: RequirementsJson,
) {
  return dialect === "x402"
    ? { x402Version, paymentPayload: payload, paymentRequirements: requirements }
    : { payload, requirements };
}

/** The payer's next transaction nonce and today's fees, for its signed approve transaction. */
export async function approvalTerms(client: PublicClient, payer: `0x${string}`) {
  const [nonce, { maxFeePerGas, maxPriorityFeePerGas }] = await Promise.all([
    client.getTransactionCount({ address: payer, blockTag: "pending" }),
    client.estimateFeesPerGas(),
  ]);
  return { nonce, maxFeePerGas, maxPriorityFeePerGas };
}
