/**
 * The `upto` scheme on the wire: a Permit2 PermitWitnessTransferFrom for the x402 upto proxy whose
 * witness also names the one facilitator that may settle it, and the proxy calls that move
 * `amount` (at most the permitted maximum) to the recipient.
 */
import { type Address, encodeFunctionData, type Hex, parseAbi } from "viem";
import { hashWords, writeAddress, writeBytes32, writeUint } from "../chain/abi-words.js";
import { hexOf } from "../chain/keccak.js";
import {
  type Eip2612Permit,
  type Permit2Authorization,
  permit2WitnessTypes,
  permitArgs,
  permitWitnessDigest,
  splitSignature,
  typeHash,
} from "../exact/permit2-encoding.js";

export const UPTO_PERMIT2_PROXY_ADDRESS: Address = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";

export const uptoProxyAbi = parseAbi([
  "struct TokenPermissions { address token; uint256 amount; }",
  "struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }",
  "struct Witness { address to; address facilitator; uint256 validAfter; }",
  "struct EIP2612Permit { uint256 value; uint256 deadline; bytes32 r; bytes32 s; uint8 v; }",
  "function PERMIT2() view returns (address)",
  "function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)",
  "function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)",
  "error AmountExceedsPermitted()",
  "error UnauthorizedFacilitator()",
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
]);

/** EIP-712 types of an upto authorization: the exact scheme's, with the facilitator witnessed. */
export const uptoWitnessTypes = {
  ...permit2WitnessTypes,
  Witness: [
    { name: "to", type: "address" },
    { name: "facilitator", type: "address" },
    { name: "validAfter", type: "uint256" },
  ],
} as const;

export interface UptoAuthorization extends Omit<Permit2Authorization, "witness"> {
  readonly witness: Permit2Authorization["witness"] & { readonly facilitator: Address };
}

const WITNESS = "Witness(address to,address facilitator,uint256 validAfter)";
const WITNESS_TYPEHASH = typeHash(WITNESS);

/** The EIP-712 digest the payer signed: what hashTypedData computes over uptoWitnessTypes. */
export function uptoDigest(chainId: number, authorization: UptoAuthorization): Hex {
  const { witness } = authorization;
  const witnessHash = hashWords(4, (out) => {
    writeBytes32(out, 0, WITNESS_TYPEHASH);
    writeAddress(out, 32, witness.to);
    writeAddress(out, 64, witness.facilitator);
    writeUint(out, 96, witness.validAfter);
  });
  return permitWitnessDigest(chainId, authorization, WITNESS, hexOf(witnessHash));
}

/** The upto proxy call that settles `amount` of `authorization`. */
export function uptoSettleCalldata(
  authorization: UptoAuthorization,
  amount: bigint,
  signature: Hex,
  permit2612?: Eip2612Permit,
): Hex {
  const permit = permitArgs(authorization);
  const rest = [amount, authorization.from, authorization.witness, signature] as const;
  if (!permit2612) {
    return encodeFunctionData({
      abi: uptoProxyAbi,
      functionName: "settle",
      args: [permit, ...rest],
    });
  }
  const split = splitSignature(permit2612.signature);
  return encodeFunctionData({
    abi: uptoProxyAbi,
    functionName: "settleWithPermit",
    args: [{ value: permit2612.value, deadline: permit2612.deadline, ...split }, permit, ...rest],
  });
}
