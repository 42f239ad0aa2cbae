/** Builds secp256k1's table (~80 ms) with a throwaway key: a key file may be a once-only pipe. */
import { privateKeyToAddress } from "viem/accounts";

const THROWAWAY = `0x${"0".repeat(63)}1` as const;

export function warmCurve(): void {
  privateKeyToAddress(THROWAWAY);
}
