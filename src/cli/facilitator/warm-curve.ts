/**
 * secp256k1 in JS (viem's noble curves) builds its table of the base point's multiples on first
 * use: about 80 ms of a cold `settle`'s CPU after its input arrived, at load 20 (deriving the
 * key's address, then signing). Built with a throwaway key where the command would wait anyway
 * (settle: for its stdin; pay: for its RPC), the real key's first use is cheap. Never a real key:
 * a key file may be a pipe that can be read only once.
 */
import { privateKeyToAddress } from "viem/accounts";

const THROWAWAY = `0x${"0".repeat(63)}1` as const;

export function warmCurve(): void {
  privateKeyToAddress(THROWAWAY);
}
