/**
 * What an x402 buyer does: sign an `exact` payment for given requirements, as the official client
 * does (the same JSON shapes and field order), with EIP-3009 (x402 v1 and v2) or Permit2 through
 * the x402 exact proxy (v2), optionally carrying the payer's EIP-2612 approval of Permit2 in the
 * `eip2612GasSponsoring` extension. `facilitator pay` and the devnet's sample requests use it.
 */
import {
  type Address,
  bytesToHex,
  encodeFunctionData,
  getAddress,
  type Hex,
  maxUint256,
  type PublicClient,
  parseAbi,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEFAULT_RESOURCE, type RequirementsJson } from "../../protocol/client-request.js";
import type { DevAccount } from "../devnet/accounts.js";
import { signEip2612GasSponsoring, signPermit2Payment } from "../devnet/sign-permit2.js";
import { transferWithAuthorizationTypedData } from "../exact/eip3009-encoding.js";
import { PERMIT2_ADDRESS } from "../exact/permit2-encoding.js";

export type TransferMethod = "eip3009" | "permit2";

export { DEFAULT_RESOURCE, type RequirementsJson };

export interface SignPaymentOptions {
  readonly chainId: number;
  readonly x402Version: 1 | 2;
  readonly requirements: RequirementsJson;
  /** The amount in atomic units (the requirements' `amount` or `maxAmountRequired`). */
  readonly amount: bigint;
  readonly method: TransferMethod;
  /** Seconds the authorization stays valid (default: the requirements' maxTimeoutSeconds). */
  readonly validForSeconds?: number;
  /** v2's `resource`: what is being paid for. */
  readonly resource?: { url: string; description?: string; mimeType?: string };
  /**
   * Permit2 only: also sign the payer's EIP-2612 permit for Permit2 with this permit nonce (the
   * token's `nonces(payer)`), so a payer that never approved Permit2 can pay.
   */
  readonly eip2612?: { readonly name: string; readonly version: string; readonly nonce: bigint };
  /**
   * Permit2 only: carry the payer's signed approve(Permit2) transaction instead (the
   * erc20ApprovalGasSponsoring extension), at this nonce of the payer's and these fees.
   */
  readonly approval?: {
    readonly nonce: number;
    readonly maxFeePerGas: bigint;
    readonly maxPriorityFeePerGas: bigint;
  };
}

/** The EIP-712 domain name and version the requirements carry in `extra`. */
export function domainOf(requirements: RequirementsJson): { name: string; version: string } {
  const extra = requirements.extra ?? {};
  const { name, version } = extra as { name?: unknown; version?: unknown };
  if (typeof name !== "string" || typeof version !== "string") {
    throw new Error("the requirements' extra must carry the token's EIP-712 name and version");
  }
  return { name, version };
}

async function signEip3009(payer: DevAccount, options: SignPaymentOptions, validBefore: bigint) {
  const { requirements } = options;
  const domain = domainOf(requirements);
  const authorization = {
    from: getAddress(payer.address),
    to: getAddress(requirements.payTo),
    value: options.amount.toString(),
    validAfter: "0",
    validBefore: validBefore.toString(),
    nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(32))) as Hex,
  };
  const signature = await privateKeyToAccount(payer.privateKey).signTypedData(
    transferWithAuthorizationTypedData(
      { ...domain, chainId: options.chainId, verifyingContract: getAddress(requirements.asset) },
      { ...authorization, value: options.amount, validAfter: 0n, validBefore },
    ),
  );
  return { signature, authorization };
}

/** Signs the payment and returns the x402 PaymentPayload (v1 or v2). */
export async function signPayment(payer: DevAccount, options: SignPaymentOptions) {
  const { requirements, x402Version } = options;
  const validFor = options.validForSeconds ?? requirements.maxTimeoutSeconds ?? 300;
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + validFor);
  if (options.method === "permit2") {
    if (x402Version !== 2) throw new Error("Permit2 payments are x402 v2 only");
    const asset = getAddress(requirements.asset) as Address;
    const payload = await signPermit2Payment(
      options.chainId,
      payer,
      {
        asset,
        amount: options.amount,
        payTo: getAddress(requirements.payTo),
        maxTimeoutSeconds: validFor,
      },
      { deadline: validBefore },
    );
    const extensions = options.approval
      ? {
          erc20ApprovalGasSponsoring: {
            info: await signApproval(payer, options.chainId, asset, options.approval),
          },
        }
      : options.eip2612
        ? {
            eip2612GasSponsoring: {
              info: await signEip2612GasSponsoring(
                { rpcUrl: "", chainId: options.chainId },
                payer,
                { address: asset, name: options.eip2612.name, version: options.eip2612.version },
                options.amount,
                validBefore,
                options.eip2612.nonce,
              ),
            },
          }
        : undefined;
    return {
      x402Version: 2,
      payload,
      ...(extensions ? { extensions } : {}),
      resource: options.resource ?? DEFAULT_RESOURCE,
      accepted: requirements,
    };
  }
  const payload = await signEip3009(payer, options, validBefore);
  return x402Version === 2
    ? {
        x402Version: 2,
        resource: options.resource ?? DEFAULT_RESOURCE,
        accepted: requirements,
        payload,
      }
    : { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload };
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

/** The payer's signed approve(Permit2, max) transaction, as the x402 client signs it (70,000 gas). */
async function signApproval(
  payer: DevAccount,
  chainId: number,
  asset: Address,
  approval: NonNullable<SignPaymentOptions["approval"]>,
) {
  const account = privateKeyToAccount(payer.privateKey);
  const signedTransaction = await account.signTransaction({
    chainId,
    to: asset,
    data: encodeFunctionData({
      abi: parseAbi(["function approve(address spender, uint256 amount) returns (bool)"]),
      args: [PERMIT2_ADDRESS, maxUint256],
    }),
    nonce: approval.nonce,
    gas: 70_000n,
    maxFeePerGas: approval.maxFeePerGas,
    maxPriorityFeePerGas: approval.maxPriorityFeePerGas,
  });
  return {
    from: account.address,
    asset,
    spender: PERMIT2_ADDRESS,
    amount: maxUint256.toString(),
    signedTransaction,
    version: "1",
  };
}

/** The payer's next transaction nonce and today's fees, for its signed approve transaction. */
export async function approvalTerms(client: PublicClient, payer: Address) {
  const [nonce, fees] = await Promise.all([
    client.getTransactionCount({ address: payer, blockTag: "pending" }),
    client.estimateFeesPerGas(),
  ]);
  return {
    nonce,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  };
}
