/**
 * Signing x402x-style EIP-2612 permit payments on the devnet (`authorizationType: "permit"`),
 * with a settlement account of ours as the spender: the shape our permit method settles.
 */
import { type Address, createPublicClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { eip2612PermitTypes } from "../exact/permit.js";
import type { DevAccount } from "./accounts.js";
import { testPermitTokenAbi } from "./artifacts.js";
import { type DevnetInfo, devnetChain } from "./setup.js";

export interface PermitOptions {
  readonly spender?: Address;
  readonly value?: bigint;
  /** Default: the token's next permit nonce for the payer. */
  readonly nonce?: bigint;
  readonly deadline?: bigint;
  /** Who signs, when not the payer (to make a forged permit). */
  readonly signer?: DevAccount;
}

/** A request body (reference dialect, x402 v2) paying the permit token with an EIP-2612 permit. */
export async function signPermitRequest(
  devnet: DevnetInfo,
  payer: DevAccount,
  options: PermitOptions = {},
) {
  const token = devnet.permitToken;
  const value = options.value ?? 10_000n;
  const spender = options.spender ?? devnet.facilitator.address;
  const deadline = options.deadline ?? BigInt(Math.floor(Date.now() / 1000) + 24 * 3600);
  const message = { owner: payer.address, spender, value, deadline };
  const { nonce, signature } = await signEip2612Permit(
    devnet,
    (options.signer ?? payer).privateKey,
    token,
    message,
    options.nonce,
  );
  const requirements = {
    scheme: "exact",
    network: devnet.network,
    amount: "10000",
    asset: token.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    paymentType: "permit",
    extra: { name: token.name, version: token.version },
  };
  const payload = {
    x402Version: 2,
    accepted: requirements,
    payload: {
      authorizationType: "permit",
      signature,
      authorization: {
        owner: payer.address,
        spender,
        value: value.toString(),
        deadline: deadline.toString(),
        nonce: nonce.toString(),
      },
    },
  };
  return { payload, requirements };
}

/**
 * Signs an EIP-2612 permit of `token` with `privateKey`; the permit nonce is read from the token
 * for `message.owner` unless given.
 */
export async function signEip2612Permit(
  devnet: Pick<DevnetInfo, "rpcUrl" | "chainId">,
  privateKey: Hex,
  token: { readonly address: Address; readonly name: string; readonly version: string },
  message: { owner: Address; spender: Address; value: bigint; deadline: bigint },
  permitNonce?: bigint,
): Promise<{ nonce: bigint; signature: Hex }> {
  const nonce =
    permitNonce ??
    (await createPublicClient({
      chain: devnetChain(devnet.rpcUrl, devnet.chainId),
      transport: http(devnet.rpcUrl, { retryCount: 0 }),
    }).readContract({
      address: token.address,
      abi: testPermitTokenAbi,
      functionName: "nonces",
      args: [message.owner],
    }));
  const signature = await privateKeyToAccount(privateKey).signTypedData({
    domain: {
      name: token.name,
      version: token.version,
      chainId: devnet.chainId,
      verifyingContract: token.address,
    },
    types: eip2612PermitTypes,
    primaryType: "Permit",
    message: { ...message, nonce },
  });
  return { nonce, signature };
}
