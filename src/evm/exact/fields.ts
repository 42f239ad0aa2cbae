/** zod field types for EVM payloads: strict, with messages that say what was expected. */
import { type Address, getAddress, type Hex, isAddress } from "viem";
import { z } from "zod";

const MAX_UINT256 = 2n ** 256n - 1n;

export const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "expected a 0x-prefixed 20-byte hex address")
  .refine((value) => isAddress(value, { strict: true }), "address has an invalid EIP-55 checksum")
  .transform((value) => getAddress(value) as Address);

export const uint256 = z
  .string({ error: "expected a decimal string" })
  .regex(/^[0-9]{1,78}$/, "expected a non-negative whole number as a decimal string")
  .transform((value) => BigInt(value))
  .refine((value) => value <= MAX_UINT256, "does not fit in uint256");

export const bytes32 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, "expected 0x and 32 bytes of hex")
  .transform((value) => value.toLowerCase() as Hex);

export const hexBytes = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2})+$/, "expected 0x-prefixed hex bytes")
  .transform((value) => value.toLowerCase() as Hex);
