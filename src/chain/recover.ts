/**
 * Public-key recovery, the largest CPU cost of a verify. viem's pure-JS recovery is used by
 * default (nothing to load: right for a one-shot CLI); a long-running server switches to
 * libsecp256k1 compiled to WebAssembly (tiny-secp256k1), about five times faster per recovery but
 * about 0.1 s to load.
 */
import {
  type Address,
  getAddress,
  type Hex,
  hexToBytes,
  keccak256,
  recoverAddress,
  sliceHex,
} from "viem";

type RecoverFn = (
  hash: Uint8Array,
  signature: Uint8Array,
  recoveryId: 0 | 1 | 2 | 3,
  compressed?: boolean,
) => Uint8Array | null;

let wasmRecover: RecoverFn | undefined;

/** Loads the WebAssembly recovery once; later recoveries use it. */
export async function useWasmRecovery(): Promise<void> {
  const secp = await import("tiny-secp256k1");
  wasmRecover = secp.recover as RecoverFn;
}

/** The address that signed `digest` with a 65-byte (r, s, v) signature; undefined if none. */
export async function recoverSigner(digest: Hex, signature: Hex): Promise<Address | undefined> {
  if (!wasmRecover) {
    try {
      return await recoverAddress({ hash: digest, signature });
    } catch {
      return undefined;
    }
  }
  const bytes = hexToBytes(signature);
  const v = bytes[64] as number;
  // As viem does: v of 27/28 or a bare recovery bit of 0/1.
  const recoveryId = v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : undefined;
  if (recoveryId === undefined) return undefined;
  try {
    const publicKey = wasmRecover(
      hexToBytes(digest),
      bytes.subarray(0, 64),
      recoveryId as 0 | 1,
      false,
    );
    if (!publicKey) return undefined;
    return getAddress(sliceHex(keccak256(publicKey.subarray(1)), 12));
  } catch {
    return undefined;
  }
}
