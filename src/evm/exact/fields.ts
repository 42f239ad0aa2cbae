/** zod field types for EVM payloads: strict, with messages that say what was expected. */
import { type Address, type Hex, isErc6492Signature, parseErc6492Signature } from "viem";
import * as z from "../../protocol/zod.js";
import { checksumAddress, hasValidChecksum } from "../chain/address.js";

const MAX_UINT256 = 2n ** 256n - 1n;

export const address = z.pipe(
  z
    .string()
    .check(
      z.regex(/^0x[0-9a-fA-F]{40}$/, "expected a 0x-prefixed 20-byte hex address"),
      z.refine(hasValidChecksum, "address has an invalid EIP-55 checksum"),
    ),
  z.transform((value: string): Address => checksumAddress(value.slice(2).toLowerCase())),
);

export const uint256 = z
  .pipe(
    z
      .string({ error: "expected a decimal string" })
      .check(z.regex(/^[0-9]{1,78}$/, "expected a non-negative whole number as a decimal string")),
    z.transform((value: string) => BigInt(value)),
  )
  .check(z.refine((value: bigint) => value <= MAX_UINT256, "does not fit in uint256"));

export const bytes32 = z.pipe(
  z.string().check(z.regex(/^0x[0-9a-fA-F]{64}$/, "expected 0x and 32 bytes of hex")),
  z.transform((value: string) => value.toLowerCase() as Hex),
);

export const hexBytes = z.pipe(
  z.string().check(z.regex(/^0x([0-9a-fA-F]{2})+$/, "expected 0x-prefixed hex bytes")),
  z.transform((value: string) => value.toLowerCase() as Hex),
);

/** An ERC-6492 wrapper (the magic suffix) whose inside does not decode: a payer's malformed input. */
function undecodableWrapper(value: Hex): boolean {
  if (!isErc6492Signature(value)) return false;
  try {
    parseErc6492Signature(value);
    return false;
  } catch {
    return true;
  }
}

/** A signature: hex bytes, and an ERC-6492 wrapper only if it decodes (factory, data, signature). */
export const signatureBytes = hexBytes.check(
  z.refine(
    (value: Hex) => !undecodableWrapper(value),
    "ends with the ERC-6492 magic suffix but is no ERC-6492 wrapper (abi-encoded factory, calldata and signature)",
  ),
);
