/**
 * Whether a signature over an EIP-712 digest is the payer's: ECDSA for accounts without code,
 * the wallet's own EIP-1271 answer for contract wallets and EIP-7702 accounts, ERC-6492 wrappers
 * unwrapped (undeployed wallets are refused: no factory is allowed to run).
 */
import {
  type Address,
  type Hex,
  hexToNumber,
  isAddressEqual,
  isErc6492Signature,
  parseAbi,
  parseErc6492Signature,
  size,
  sliceHex,
  zeroAddress,
} from "viem";
import { isUnreachable } from "../../chain/rpc.js";
import { recoverSigner } from "../../chain/secp256k1.js";
import { failure } from "../../errors.js";
import type { SchemeContext } from "../types.js";
import { chainFailure, type Step } from "./checks.js";

const erc1271Abi = parseAbi([
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
]);
const ERC1271_MAGIC = "0x1626ba7e";
/** secp256k1 n / 2: signatures with a larger s are rejected on chain by USDC. */
const HALF_CURVE_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/** True for a 65-byte signature a token would refuse even though it recovers off chain. */
export function isMalleable(signature: Hex): boolean {
  if (size(signature) !== 65) return false;
  const s = BigInt(sliceHex(signature, 32, 64));
  const v = hexToNumber(sliceHex(signature, 64, 65));
  return s > HALF_CURVE_ORDER || (v !== 27 && v !== 28);
}

const invalid = (why: string): Step<null> => ({
  ok: false,
  failure: failure("invalid_signature", `the signature ${why}`),
});

/** `payerCode` is the payer's code, read earlier in the same batch as the other reads. */
export async function checkSignature(
  ctx: SchemeContext,
  payer: Address,
  digest: Hex,
  signed: Hex,
  payerCode: Promise<Hex | undefined>,
): Promise<Step<null>> {
  let signature = signed;
  let code: Hex | undefined;
  try {
    code = await payerCode;
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the payer's code") };
  }
  const payerHasCode = code !== undefined && code !== "0x";

  if (isErc6492Signature(signature)) {
    const wrapped = parseErc6492Signature(signature);
    if (!payerHasCode && wrapped.address && !isAddressEqual(wrapped.address, zeroAddress)) {
      return {
        ok: false,
        failure: failure(
          "unsupported_signature",
          "ERC-6492 signatures of undeployed wallets are not supported: no wallet factory is allowed",
        ),
      };
    }
    signature = wrapped.signature;
  }

  if (payerHasCode) {
    // A contract wallet (or an EIP-7702 account): only its EIP-1271 answer counts.
    try {
      const answer = await ctx.client.readContract({
        address: payer,
        abi: erc1271Abi,
        functionName: "isValidSignature",
        args: [digest, signature],
      });
      return answer === ERC1271_MAGIC
        ? { ok: true, value: null }
        : invalid("is refused by the payer's wallet contract (EIP-1271)");
    } catch (error) {
      if (isUnreachable(error))
        return { ok: false, failure: chainFailure(error, "asking the payer's wallet") };
      return invalid("is refused by the payer's wallet contract (EIP-1271)");
    }
  }

  if (size(signature) !== 65) {
    return invalid(`must be 65 bytes for an account without code; got ${size(signature)}`);
  }
  return recoversTo(ctx, payer, digest, signature);
}

/** Whether a 65-byte signature recovers to `payer`. */
export async function recoversTo(
  ctx: SchemeContext,
  payer: Address,
  digest: Hex,
  signature: Hex,
): Promise<Step<null>> {
  let signer: Address | undefined;
  try {
    signer = await recoverSigner(ctx.client, digest, signature);
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "recovering the signer") };
  }
  if (!signer) return invalid("cannot be recovered");
  return isAddressEqual(signer, payer)
    ? { ok: true, value: null }
    : invalid(`recovers to ${signer}, not to the payer ${payer}`);
}
