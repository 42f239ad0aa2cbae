/**
 * Public-key recovery, the largest CPU cost of a verify. Two ways, same answer:
 * - a long-running server loads libsecp256k1 compiled to WebAssembly (tiny-secp256k1) once: about
 *   0.4 ms per recovery here, five times faster than pure JS, but about 0.1 s to load;
 * - a one-shot CLI asks the node's ecrecover precompile instead, in the same batched round trip
 *   as its other reads, so it loads and warms up no curve code at all.
 * Both accept v as 27/28 or as a bare recovery bit 0/1, and high-s values, as viem does.
 */
import {
  type Address,
  getAddress,
  type Hex,
  hexToBytes,
  keccak256,
  type PublicClient,
  sliceHex,
  toHex,
} from "viem";

type RecoverFn = (
  hash: Uint8Array,
  signature: Uint8Array,
  recoveryId: 0 | 1 | 2 | 3,
  compressed?: boolean,
) => Uint8Array | null;

let wasmRecover: RecoverFn | undefined;

const ECRECOVER = "0x0000000000000000000000000000000000000001";

/** Loads the WebAssembly recovery once; later recoveries use it. */
export async function useWasmRecovery(): Promise<void> {
  const secp = await import("tiny-secp256k1");
  wasmRecover = secp.recover as RecoverFn;
}

/**
 * The address that signed `digest` with a 65-byte (r, s, v) signature; undefined if none.
 * Throws only when the node cannot be reached.
 */
export async function recoverSigner(
  client: PublicClient,
  digest: Hex,
  signature: Hex,
): Promise<Address | undefined> {
  const bytes = hexToBytes(signature);
  if (bytes.length !== 65) return undefined;
  const v = bytes[64] as number;
  const recoveryId = v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : undefined;
  if (recoveryId === undefined) return undefined;

  if (wasmRecover) {
    try {
      const publicKey = wasmRecover(
        hexToBytes(digest),
        bytes.subarray(0, 64),
        recoveryId as 0 | 1,
        false,
      );
      return publicKey ? getAddress(sliceHex(keccak256(publicKey.subarray(1)), 12)) : undefined;
    } catch {
      return undefined;
    }
  }

  // ecrecover(hash, v, r, s): 32-byte words; it answers nothing for a signature it cannot recover.
  const input =
    `${digest}${toHex(27 + recoveryId, { size: 32 }).slice(2)}${signature.slice(2, 130)}` as Hex;
  const { data } = await client.call({ to: ECRECOVER, data: input });
  if (!data || hexToBytes(data).length !== 32) return undefined;
  const address = getAddress(sliceHex(data, 12));
  return address === "0x0000000000000000000000000000000000000000" ? undefined : address;
}
