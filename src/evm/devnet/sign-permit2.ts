/**
 * Signing x402 Permit2 payments on the devnet, as an x402 client does: the Permit2
 * PermitWitnessTransferFrom authorization for the exact proxy (witness {to, validAfter}) or the
 * upto proxy (witness {to, facilitator, validAfter}), and the EIP-2612 permit of Permit2 that the
 * `eip2612GasSponsoring` extension carries. The JSON shapes (field order included) are the ones
 * the official client produces.
 */
import { type Address, getAddress, type Hex, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { eip2612PermitTypes } from "../exact/permit.js";
import { permit2WitnessTypes } from "../exact/permit2-encoding.js";
import { uptoWitnessTypes } from "../upto/encoding.js";
import type { DevAccount } from "./accounts.js";
import {
  type DevnetInfo,
  EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_ADDRESS,
  UPTO_PERMIT2_PROXY_ADDRESS,
} from "./setup.js";
import { signEip2612Permit } from "./sign-permit.js";

/** The EIP-712 types the devnet signs with, as the verifier checks them. */
export { eip2612PermitTypes, permit2WitnessTypes };

/** `payload.permit2Authorization` on the wire: numbers as decimal strings. */
export interface Permit2AuthorizationJson {
  from: Address;
  permitted: { token: Address; amount: string };
  spender: Address;
  nonce: string;
  deadline: string;
  witness: { to: Address; validAfter: string };
}

export interface Permit2PaymentJson {
  signature: Hex;
  permit2Authorization: Permit2AuthorizationJson;
}

export interface Permit2Terms {
  readonly asset: Address;
  readonly amount: bigint;
  readonly payTo: Address;
  /** The authorization's deadline is now + this. */
  readonly maxTimeoutSeconds: number;
}

export interface Permit2SignOptions {
  /** Default: 32 random bytes, as the official client. */
  readonly nonce?: bigint;
  /** Default: now + maxTimeoutSeconds. */
  readonly deadline?: bigint;
  /** Default: 0, as the official client. */
  readonly validAfter?: bigint;
  /** Default: the exact proxy (a different spender makes a payment the proxy cannot settle). */
  readonly spender?: Address;
  /** The paying address when it is not the signer's: a contract wallet `payer` owns. */
  readonly from?: Address;
}

/** 32 random bytes as a uint256: a fresh Permit2 unordered nonce. */
export function randomPermit2Nonce(): bigint {
  return BigInt(toHex(crypto.getRandomValues(new Uint8Array(32))));
}

/** The typed data of an exact-scheme Permit2 authorization on chain `chainId`. */
export function permit2AuthorizationTypedData(
  chainId: number,
  authorization: Permit2AuthorizationJson,
) {
  return {
    domain: { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS },
    types: permit2WitnessTypes,
    primaryType: "PermitWitnessTransferFrom",
    message: {
      permitted: {
        token: authorization.permitted.token,
        amount: BigInt(authorization.permitted.amount),
      },
      spender: authorization.spender,
      nonce: BigInt(authorization.nonce),
      deadline: BigInt(authorization.deadline),
      witness: {
        to: authorization.witness.to,
        validAfter: BigInt(authorization.witness.validAfter),
      },
    },
  } as const;
}

/** Signs an exact-scheme Permit2 payment (`payload` of an x402 v2 PaymentPayload). */
export async function signPermit2Payment(
  chainId: number,
  payer: DevAccount,
  terms: Permit2Terms,
  options: Permit2SignOptions = {},
): Promise<Permit2PaymentJson> {
  const account = privateKeyToAccount(payer.privateKey);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const permit2Authorization: Permit2AuthorizationJson = {
    from: getAddress(options.from ?? account.address),
    permitted: { token: getAddress(terms.asset), amount: terms.amount.toString() },
    spender: getAddress(options.spender ?? EXACT_PERMIT2_PROXY_ADDRESS),
    nonce: (options.nonce ?? randomPermit2Nonce()).toString(),
    deadline: (options.deadline ?? now + BigInt(terms.maxTimeoutSeconds)).toString(),
    witness: { to: getAddress(terms.payTo), validAfter: (options.validAfter ?? 0n).toString() },
  };
  const signature = await account.signTypedData(
    permit2AuthorizationTypedData(chainId, permit2Authorization),
  );
  return { signature, permit2Authorization };
}

/** `payload.permit2Authorization` of the upto scheme. */
export interface UptoPermit2AuthorizationJson extends Omit<Permit2AuthorizationJson, "witness"> {
  witness: { to: Address; facilitator: Address; validAfter: string };
}

export interface UptoPermit2PaymentJson {
  signature: Hex;
  permit2Authorization: UptoPermit2AuthorizationJson;
}

/**
 * Signs an upto-scheme Permit2 payment: at most `terms.amount`, settled only by `facilitator`
 * through the upto proxy.
 */
export async function signUptoPermit2Payment(
  chainId: number,
  payer: DevAccount,
  terms: Permit2Terms & { readonly facilitator: Address },
  options: Permit2SignOptions = {},
): Promise<UptoPermit2PaymentJson> {
  const account = privateKeyToAccount(payer.privateKey);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const permit2Authorization: UptoPermit2AuthorizationJson = {
    from: getAddress(options.from ?? account.address),
    permitted: { token: getAddress(terms.asset), amount: terms.amount.toString() },
    spender: getAddress(options.spender ?? UPTO_PERMIT2_PROXY_ADDRESS),
    nonce: (options.nonce ?? randomPermit2Nonce()).toString(),
    deadline: (options.deadline ?? now + BigInt(terms.maxTimeoutSeconds)).toString(),
    witness: {
      to: getAddress(terms.payTo),
      facilitator: getAddress(terms.facilitator),
      validAfter: (options.validAfter ?? 0n).toString(),
    },
  };
  const { witness } = permit2Authorization;
  const exact = permit2AuthorizationTypedData(chainId, permit2Authorization);
  const signature = await account.signTypedData({
    ...exact,
    types: uptoWitnessTypes,
    message: {
      ...exact.message,
      witness: { ...witness, validAfter: BigInt(witness.validAfter) },
    },
  });
  return { signature, permit2Authorization };
}

/** `paymentPayload.extensions.eip2612GasSponsoring.info`. */
export interface Eip2612GasSponsoringInfo {
  from: Address;
  asset: Address;
  spender: Address;
  amount: string;
  nonce: string;
  deadline: string;
  signature: Hex;
  version: "1";
}

export interface Eip2612Token {
  readonly address: Address;
  readonly name: string;
  readonly version: string;
}

/**
 * Signs the payer's EIP-2612 permit for Permit2 to spend `amount` of `token` until `deadline`
 * (the Permit2 authorization's deadline, as the official client does). The permit nonce is read
 * from the token unless given.
 */
export async function signEip2612GasSponsoring(
  devnet: Pick<DevnetInfo, "rpcUrl" | "chainId">,
  payer: DevAccount,
  token: Eip2612Token,
  amount: bigint,
  deadline: bigint,
  permitNonce?: bigint,
): Promise<Eip2612GasSponsoringInfo> {
  const spender = getAddress(PERMIT2_ADDRESS);
  const { nonce, signature } = await signEip2612Permit(
    devnet,
    payer.privateKey,
    token,
    { owner: payer.address, spender, value: amount, deadline },
    permitNonce,
  );
  return {
    from: payer.address,
    asset: token.address,
    spender,
    amount: amount.toString(),
    nonce: nonce.toString(),
    deadline: deadline.toString(),
    signature,
    version: "1",
  };
}
