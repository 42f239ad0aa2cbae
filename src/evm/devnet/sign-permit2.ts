/** x402 Permit2 payments as the official client signs them (its JSON field order). */
import { type Address, getAddress, type TypedData, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_ADDRESS,
  permit2WitnessTypes,
} from "../exact/permit2-encoding.js";
import { UPTO_PERMIT2_PROXY_ADDRESS, uptoWitnessTypes } from "../upto/encoding.js";
import type { DevAccount } from "./accounts.js";
import type { DevnetNode } from "./setup.js";
import { type Eip2612Token, signEip2612Permit } from "./sign-permit.js";

/** The EIP-712 types the devnet signs permits with, as the verifier checks them. */
export { eip2612PermitTypes } from "../exact/permit.js";

/** An exact-scheme Permit2 `payload` on the wire: numbers as decimal strings. */
export type Permit2PaymentJson = Awaited<ReturnType<typeof signWitnessTransfer<{ to: Address }>>>;
export type UptoPermit2PaymentJson = Awaited<ReturnType<typeof signUptoPermit2Payment>>;

interface Permit2Terms {
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
  /** Default: the scheme's proxy (a different spender makes a payment the proxy cannot settle). */
  readonly spender?: Address;
  /** The paying address when it is not the signer's: a contract wallet `payer` owns. */
  readonly from?: Address;
}

/** 32 random bytes as a uint256: a fresh Permit2 unordered nonce. */
export function randomPermit2Nonce(): bigint {
  return BigInt(toHex(crypto.getRandomValues(new Uint8Array(32))));
}

/** Signs a PermitWitnessTransferFrom to `proxy` whose witness is `witness` and then validAfter. */
async function signWitnessTransfer<W extends Record<string, Address>>(
  chainId: number,
  payer: DevAccount,
  terms: Permit2Terms,
  options: Permit2SignOptions,
  proxy: Address,
  witness: W,
  types: TypedData,
) {
  const account = privateKeyToAccount(payer.privateKey);
  const validAfter = options.validAfter ?? 0n;
  const nonce = options.nonce ?? randomPermit2Nonce();
  const deadline =
    options.deadline ?? BigInt(Math.floor(Date.now() / 1000)) + BigInt(terms.maxTimeoutSeconds);
  const permitted = { token: getAddress(terms.asset), amount: terms.amount };
  const spender = getAddress(options.spender ?? proxy);
  const signature = await account.signTypedData({
    domain: { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS },
    types,
    primaryType: "PermitWitnessTransferFrom",
    message: { permitted, spender, nonce, deadline, witness: { ...witness, validAfter } },
  });
  const permit2Authorization = {
    from: getAddress(options.from ?? account.address),
    permitted: { ...permitted, amount: terms.amount.toString() },
    spender,
    nonce: nonce.toString(),
    deadline: deadline.toString(),
    witness: { ...witness, validAfter: validAfter.toString() },
  };
  return { signature, permit2Authorization };
}

/** Signs an exact-scheme Permit2 payment (`payload` of an x402 v2 PaymentPayload). */
export function signPermit2Payment(
  chainId: number,
  payer: DevAccount,
  terms: Permit2Terms,
  options: Permit2SignOptions = {},
): Promise<Permit2PaymentJson> {
  const witness = { to: getAddress(terms.payTo) };
  const proxy = EXACT_PERMIT2_PROXY_ADDRESS;
  return signWitnessTransfer(chainId, payer, terms, options, proxy, witness, permit2WitnessTypes);
}

/** Signs an upto-scheme Permit2 payment: at most `terms.amount`, settled only by `facilitator`. */
export function signUptoPermit2Payment(
  chainId: number,
  payer: DevAccount,
  terms: Permit2Terms & { readonly facilitator: Address },
  options: Permit2SignOptions = {},
) {
  const witness = { to: getAddress(terms.payTo), facilitator: getAddress(terms.facilitator) };
  const proxy = UPTO_PERMIT2_PROXY_ADDRESS;
  return signWitnessTransfer(chainId, payer, terms, options, proxy, witness, uptoWitnessTypes);
}

/** The payer's EIP-2612 permit for Permit2 to its deadline; the nonce read unless given. */
export async function signEip2612GasSponsoring(
  devnet: DevnetNode,
  payer: DevAccount,
  token: Eip2612Token,
  amount: bigint,
  deadline: bigint,
  permitNonce?: bigint,
) {
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
    version: "1" as const,
  };
}
