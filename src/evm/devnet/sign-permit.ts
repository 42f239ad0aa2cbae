/** x402x-style EIP-2612 permit payments on the devnet, a settlement account of ours the spender. */
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { eip2612PermitTypes } from "../exact/permit.js";
import type { DevAccount } from "./accounts.js";
import { testPermitTokenAbi } from "./artifacts.js";
import { type DevnetInfo, type DevnetNode, devnetReader } from "./setup.js";

interface PermitOptions {
  readonly spender?: Address;
  readonly value?: bigint;
  /** Default: the token's next permit nonce for the payer. */
  readonly nonce?: bigint;
  readonly deadline?: bigint;
  /** Who signs, when not the payer (to make a forged permit). */
  readonly signer?: DevAccount;
}

/** A token's EIP-712 domain, as an EIP-2612 permit names it. */
export interface Eip2612Token {
  readonly address: Address;
  readonly name: string;
  readonly version: string;
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
  const { nonce, signature } = await signEip2612Permit(
    devnet,
    (options.signer ?? payer).privateKey,
    token,
    { owner: payer.address, spender, value, deadline },
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
  const authorization = {
    owner: payer.address,
    spender,
    value: value.toString(),
    deadline: deadline.toString(),
    nonce: nonce.toString(),
  };
  const payload = {
    x402Version: 2,
    accepted: requirements,
    payload: { authorizationType: "permit", signature, authorization },
  };
  return { payload, requirements };
}

/** The owner's next EIP-2612 permit nonce on `token`. */
export function permitNonce(devnet: DevnetNode, token: Address, owner: Address): Promise<bigint> {
  return devnetReader(devnet).readContract({
    address: token,
    abi: testPermitTokenAbi,
    functionName: "nonces",
    args: [owner],
  });
}

/** Signs an EIP-2612 permit of `token` with `privateKey`; the nonce is read from the token unless given. */
export async function signEip2612Permit(
  devnet: DevnetNode,
  privateKey: Hex,
  token: Eip2612Token,
  message: { owner: Address; spender: Address; value: bigint; deadline: bigint },
  givenNonce?: bigint,
): Promise<{ nonce: bigint; signature: Hex }> {
  const nonce = givenNonce ?? (await permitNonce(devnet, token.address, message.owner));
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
