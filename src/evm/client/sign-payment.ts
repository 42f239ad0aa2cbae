/** An x402 buyer's `exact` payment (EIP-3009 or Permit2), in the official client's JSON shapes. */
import {
  type Address,
  bytesToHex,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  maxUint256,
  type PublicClient,
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
  /** Permit2 only: also sign the payer's EIP-2612 permit for Permit2, at this permit nonce. */
  readonly eip2612?: { readonly name: string; readonly version: string; readonly nonce: bigint };
  /** Permit2 only: carry the payer's signed approve(Permit2) transaction at this nonce and fees. */
  readonly approval?: {
    readonly nonce: number;
    readonly maxFeePerGas: bigint;
    readonly maxPriorityFeePerGas: bigint;
  };
}

/** 32 random bytes. */
export const randomBytes32 = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)));

/** The EIP-712 domain name and version the requirements carry in `extra`. */
export function domainOf(requirements: RequirementsJson): { name: string; version: string } {
  const { name, version } = (requirements.extra ?? {}) as { name?: unknown; version?: unknown };
  if (typeof name !== "string" || typeof version !== "string") {
    throw new Error("the requirements' extra must carry the token's EIP-712 name and version");
  }
  return { name, version };
}

async function signEip3009(payer: DevAccount, options: SignPaymentOptions, validBefore: bigint) {
  const { requirements, amount } = options;
  const authorization = {
    from: getAddress(payer.address),
    to: getAddress(requirements.payTo),
    value: amount.toString(),
    validAfter: "0",
    validBefore: validBefore.toString(),
    nonce: randomBytes32(),
  };
  const signature = await privateKeyToAccount(payer.privateKey).signTypedData(
    transferWithAuthorizationTypedData(
      {
        ...domainOf(requirements),
        chainId: options.chainId,
        verifyingContract: getAddress(requirements.asset),
      },
      { ...authorization, value: amount, validAfter: 0n, validBefore },
    ),
  );
  return { signature, authorization };
}

/** The sponsoring extension asked for: a signed approve(Permit2, max), or an EIP-2612 permit. */
async function sponsoring(
  payer: DevAccount,
  options: SignPaymentOptions,
  asset: Address,
  deadline: bigint,
) {
  const { chainId, approval, eip2612, amount } = options;
  if (approval) {
    const account = privateKeyToAccount(payer.privateKey);
    const signedTransaction = await account.signTransaction({
      chainId,
      to: asset,
      data: encodeFunctionData({
        abi: erc20Abi,
        functionName: "approve",
        args: [PERMIT2_ADDRESS, maxUint256],
      }),
      nonce: approval.nonce,
      gas: 70_000n,
      maxFeePerGas: approval.maxFeePerGas,
      maxPriorityFeePerGas: approval.maxPriorityFeePerGas,
    });
    const info = {
      from: account.address,
      asset,
      spender: PERMIT2_ADDRESS,
      amount: maxUint256.toString(),
      signedTransaction,
      version: "1",
    };
    return { erc20ApprovalGasSponsoring: { info } };
  }
  if (!eip2612) return undefined;
  const { name, version, nonce } = eip2612;
  const token = { address: asset, name, version };
  const node = { rpcUrl: "", chainId };
  const info = await signEip2612GasSponsoring(node, payer, token, amount, deadline, nonce);
  return { eip2612GasSponsoring: { info } };
}

/** Signs the payment and returns the x402 PaymentPayload (v1 or v2). */
export async function signPayment(payer: DevAccount, options: SignPaymentOptions) {
  const { requirements, x402Version } = options;
  const resource = options.resource ?? DEFAULT_RESOURCE;
  const validFor = options.validForSeconds ?? requirements.maxTimeoutSeconds ?? 300;
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + validFor);
  if (options.method === "eip3009") {
    const payload = await signEip3009(payer, options, validBefore);
    return x402Version === 2
      ? { x402Version: 2, resource, accepted: requirements, payload }
      : { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload };
  }
  if (x402Version !== 2) throw new Error("Permit2 payments are x402 v2 only");
  const asset = getAddress(requirements.asset);
  const terms = {
    asset,
    amount: options.amount,
    payTo: getAddress(requirements.payTo),
    maxTimeoutSeconds: validFor,
  };
  const payload = await signPermit2Payment(options.chainId, payer, terms, {
    deadline: validBefore,
  });
  const extensions = await sponsoring(payer, options, asset, validBefore);
  return {
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
export async function approvalTerms(client: PublicClient, payer: Address) {
  const [nonce, { maxFeePerGas, maxPriorityFeePerGas }] = await Promise.all([
    client.getTransactionCount({ address: payer, blockTag: "pending" }),
    client.estimateFeesPerGas(),
  ]);
  return { nonce, maxFeePerGas, maxPriorityFeePerGas };
}
