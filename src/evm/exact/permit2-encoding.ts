/** Permit2 on the wire as the x402 packages use it: addresses, the exact proxy's typed data
 * (witness {to, validAfter}) and calls. */
import {
  type Abi,
  type Address,
  decodeErrorResult,
  encodeFunctionData,
  type Hex,
  keccak256,
  parseAbi,
  size,
  toHex,
} from "viem";
import { hashStruct, typedDigestOf } from "../chain/abi-words.js";
import { domainSeparatorOf } from "./eip3009-encoding.js";

export const PERMIT2_ADDRESS: Address = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
export const EXACT_PERMIT2_PROXY_ADDRESS: Address = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";

/** What the x402 exact and upto proxies share: their structs, PERMIT2() and custom errors. */
export const x402ProxyAbiItems = [
  "struct TokenPermissions { address token; uint256 amount; }",
  "struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }",
  "struct EIP2612Permit { uint256 value; uint256 deadline; bytes32 r; bytes32 s; uint8 v; }",
  "function PERMIT2() view returns (address)",
  "error InvalidAmount()",
  "error InvalidDestination()",
  "error InvalidOwner()",
  "error PaymentTooEarly()",
  "error Permit2612AmountMismatch()",
  "error InvalidNonce()",
  "error SignatureExpired(uint256 signatureDeadline)",
  "error InvalidSigner()",
  "error InvalidContractSignature()",
  "error InvalidSignatureLength()",
  "error InvalidSignature()",
] as const;

/** The x402 exact proxy: settle(...) and settleWithPermit(...) with their custom errors. */
export const exactPermit2ProxyAbi = parseAbi([
  ...x402ProxyAbiItems,
  "struct Witness { address to; uint256 validAfter; }",
  "function settle(PermitTransferFrom permit, address owner, Witness witness, bytes signature)",
  "function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, address owner, Witness witness, bytes signature)",
  "error InvalidPermit2Address()",
  "error ReentrancyGuardReentrantCall()",
  "error InvalidAmount(uint256 maxAmount)",
]);

/** The custom error a call to a contract of `abi` reverted with, by name ("InvalidNonce"), if any. */
export function customErrorName(abi: Abi, data: Hex | undefined): string | undefined {
  if (!data || data.length < 10) return undefined;
  try {
    return decodeErrorResult({ abi, data }).errorName;
  } catch {
    return undefined;
  }
}

/** What we read of Permit2, of a token for it, and of a proxy (its Permit2's address). */
export const permit2ReadsAbi = parseAbi([
  "function PERMIT2() view returns (address)",
  "function nonceBitmap(address owner, uint256 wordPos) view returns (uint256)",
  "function balanceOf(address owner) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
]);

/** EIP-712 types of the exact scheme's Permit2 authorization (witness types sorted by name). */
export const permit2WitnessTypes = {
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: "Witness" },
  ],
  TokenPermissions: [
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
  ],
  Witness: [
    { name: "to", type: "address" },
    { name: "validAfter", type: "uint256" },
  ],
} as const;

export interface Permit2Authorization {
  readonly from: Address;
  readonly permitted: { readonly token: Address; readonly amount: bigint };
  readonly spender: Address;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly witness: { readonly to: Address; readonly validAfter: bigint };
}

/** The typed data a payer signs for `authorization` on chain `chainId`. */
export function permit2TypedData(chainId: number, authorization: Permit2Authorization) {
  const { permitted, spender, nonce, deadline, witness } = authorization;
  return {
    domain: { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS },
    types: permit2WitnessTypes,
    primaryType: "PermitWitnessTransferFrom",
    message: { permitted, spender, nonce, deadline, witness },
  } as const;
}

const typeHash = (type: string) => keccak256(toHex(type));
const TOKEN_PERMISSIONS = "TokenPermissions(address token,uint256 amount)";
const TOKEN_PERMISSIONS_TYPEHASH = typeHash(TOKEN_PERMISSIONS);
/** Per witness type: the primary type's hash and the witness's. */
const typeHashes = new Map<string, readonly [Hex, Hex]>();

/** EIP-712 digest of a PermitWitnessTransferFrom whose `witnessType` witness has these fields. */
export function permitWitnessDigest(
  chainId: number,
  authorization: Omit<Permit2Authorization, "from" | "witness">,
  witnessType: string,
  witness: readonly (Address | bigint)[],
): Hex {
  let hashes = typeHashes.get(witnessType);
  if (!hashes) {
    const primary = `PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)${TOKEN_PERMISSIONS}${witnessType}`;
    hashes = [typeHash(primary), typeHash(witnessType)];
    typeHashes.set(witnessType, hashes);
  }
  const [primary, witnessTypeHash] = hashes;
  const { permitted, spender, nonce, deadline } = authorization;
  const permittedHash = hashStruct(TOKEN_PERMISSIONS_TYPEHASH, [permitted.token, permitted.amount]);
  const fields = [permittedHash, spender, nonce, deadline, hashStruct(witnessTypeHash, witness)];
  const domain = { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS };
  return typedDigestOf(domainSeparatorOf(domain), hashStruct(primary, fields));
}

/** The digest of an exact-scheme Permit2 authorization (witness {to, validAfter}). */
export function permit2Digest(chainId: number, authorization: Permit2Authorization): Hex {
  const { to, validAfter } = authorization.witness;
  return permitWitnessDigest(chainId, authorization, "Witness(address to,uint256 validAfter)", [
    to,
    validAfter,
  ]);
}

/** Permit2 spends each (owner, nonce) once, whatever the token or proxy: the settlement's name. */
export function permit2SettlementKey(chainId: number, owner: Address, nonce: bigint): string {
  return `permit2:${chainId}:${owner}:${nonce}`.toLowerCase();
}

/** The EIP-2612 permit for Permit2 that the `eip2612GasSponsoring` extension carries. */
export interface Eip2612Permit {
  readonly value: bigint;
  readonly deadline: bigint;
  readonly signature: Hex;
}

/** The proxy call that settles `authorization` (upto: `amount` too), after the payer's permit if any. */
export function proxySettleCalldata(
  abi: Abi,
  authorization: Permit2Authorization,
  amount: readonly bigint[],
  signature: Hex,
  permit2612?: Eip2612Permit,
): Hex {
  const { permitted, nonce, deadline, from, witness } = authorization;
  const args = [{ permitted, nonce, deadline }, ...amount, from, witness, signature];
  if (!permit2612) return encodeFunctionData({ abi, functionName: "settle", args });
  const { value, deadline: until, signature: signed } = permit2612;
  const permit = { value, deadline: until, ...splitSignature(signed) };
  return encodeFunctionData({ abi, functionName: "settleWithPermit", args: [permit, ...args] });
}

/** r, s and v of a 65-byte signature (v as signed: 27/28, or 0/1 raised to 27/28). */
export function splitSignature(signature: Hex): { r: Hex; s: Hex; v: number } {
  if (size(signature) !== 65) throw new Error("expected a 65-byte signature");
  const v = Number.parseInt(signature.slice(130, 132), 16);
  return {
    r: `0x${signature.slice(2, 66)}`,
    s: `0x${signature.slice(66, 130)}`,
    v: v < 27 ? v + 27 : v,
  };
}
