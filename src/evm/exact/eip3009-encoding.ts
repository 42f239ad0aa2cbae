/** EIP-3009 on the wire: ABI, typed data, digest and call; tested equal to viem's own. */
import { type Address, domainSeparator, encodeFunctionData, type Hex, parseAbi, size } from "viem";
import { setNewest } from "../../core/newest.js";
import { hashStruct, typedDigestOf } from "../chain/abi-words.js";

export const eip3009Abi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);

/** EIP-712 types of an EIP-3009 transfer authorization. */
export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** A token's EIP-712 domain (Permit2's has no version). */
interface TokenDomain {
  readonly name: string;
  readonly version?: string | undefined;
  readonly chainId: number;
  readonly verifyingContract: Address;
}

interface AuthorizationMessage {
  readonly from: Address;
  readonly to: Address;
  readonly value: bigint;
  readonly validAfter: bigint;
  readonly validBefore: bigint;
  readonly nonce: Hex;
}

const TYPEHASH = "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267";
/** transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32) */
const TRANSFER_VRS_SELECTOR = "0xe3ee160e";
const domainSeparators = new Map<string, Hex>();

/** The EIP-712 separator of a domain (version optional), computed once per domain. */
export function domainSeparatorOf(domain: TokenDomain): Hex {
  const { name, version, chainId, verifyingContract } = domain;
  const key = `${chainId}:${verifyingContract}:${name}:${version}`;
  let separator = domainSeparators.get(key);
  if (!separator) {
    separator = domainSeparator({ domain });
    setNewest(domainSeparators, key, separator, 1024);
  }
  return separator;
}

/** The EIP-712 digest of an authorization. */
export function authorizationDigest(domain: TokenDomain, message: AuthorizationMessage): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = message;
  const fields = [from, to, value, validAfter, validBefore, nonce];
  return typedDigestOf(domainSeparatorOf(domain), hashStruct(TYPEHASH, fields));
}

/** The typed data a payer signs (and we recover from) for one authorization. */
export function transferWithAuthorizationTypedData(
  domain: TokenDomain,
  message: AuthorizationMessage,
) {
  return {
    domain,
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization",
    message,
  } as const;
}

/** The call that moves the money: the (v,r,s) overload for 65-byte signatures, else `bytes`. */
export function transferCalldata(authorization: AuthorizationMessage, signature: Hex): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = authorization;
  if (size(signature) === 65) {
    // Written directly (every verify); v goes through as signed, as the reference sends it.
    const word = (hex: string) => hex.padStart(64, "0");
    return `${TRANSFER_VRS_SELECTOR}${[
      word(from.slice(2).toLowerCase()),
      word(to.slice(2).toLowerCase()),
      word(value.toString(16)),
      word(validAfter.toString(16)),
      word(validBefore.toString(16)),
      nonce.slice(2),
      word(signature.slice(130, 132)),
      signature.slice(2, 66),
      signature.slice(66, 130),
    ].join("")}` as Hex;
  }
  return encodeFunctionData({
    abi: eip3009Abi,
    functionName: "transferWithAuthorization",
    args: [from, to, value, validAfter, validBefore, nonce, signature],
  });
}
