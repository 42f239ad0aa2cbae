/** `upto` on the wire: Permit2 for the x402 upto proxy, its witness naming the settling
 * facilitator. */
import { type Address, type Hex, parseAbi } from "viem";
import {
  type Permit2Authorization,
  permit2WitnessTypes,
  permitWitnessDigest,
  x402ProxyAbiItems,
} from "../exact/permit2-encoding.js";

export const UPTO_PERMIT2_PROXY_ADDRESS: Address = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";

export const uptoProxyAbi = parseAbi([
  ...x402ProxyAbiItems,
  "struct Witness { address to; address facilitator; uint256 validAfter; }",
  "function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)",
  "function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)",
  "error AmountExceedsPermitted()",
  "error UnauthorizedFacilitator()",
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

/** The EIP-712 digest the payer signed: what hashTypedData computes over uptoWitnessTypes. */
export function uptoDigest(chainId: number, authorization: UptoAuthorization): Hex {
  const { to, facilitator, validAfter } = authorization.witness;
  const type = "Witness(address to,address facilitator,uint256 validAfter)";
  return permitWitnessDigest(chainId, authorization, type, [to, facilitator, validAfter]);
}
