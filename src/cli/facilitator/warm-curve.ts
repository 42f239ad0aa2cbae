/**
 * Builds secp256k1's table (~80 ms) with a throwaway key while the command waits anyway; never a
 * real key (a key file may be a pipe that can be read only once).
 */
import { privateKeyToAddress } from "viem/accounts";

const THROWAWAY = `0x${"0".repeat(63)}1` as const;

export function warmCurve(): void {
  privateKeyToAddress(THROWAWAY);
}
