/** secp256k1: libsecp256k1 (native, else wasm) in a server, the node's ecrecover in a one-shot
 * CLI. Both take v as 27/28 or 0/1 and high s, as viem does. */
import { createRequire } from "node:module";
import type * as Native from "secp256k1";
import type { recover, signRecoverable } from "tiny-secp256k1";
import {
  type Address,
  bytesToHex,
  getAddress,
  type Hex,
  hexToBytes,
  keccak256,
  type LocalAccount,
  type PublicClient,
  serializeTransaction,
  sliceHex,
  toHex,
} from "viem";
import { privateKeyToAccount, toAccount } from "viem/accounts";
import { bytesOfHex } from "./abi-words.js";
import { checksumAddress } from "./address.js";
import { hexOf, keccak256Bytes } from "./keccak.js";
import { encodeSettlementTransaction, type SettlementTransaction } from "./rlp-transaction.js";

let wasmRecover: typeof recover | undefined;
let wasmSign: typeof signRecoverable | undefined;

const ECRECOVER = "0x0000000000000000000000000000000000000001";

/** Which libsecp256k1 recoveries and settlement signatures use now. */
export let secp256k1Backend: "native" | "wasm" | "js" = "js";

/** Loads libsecp256k1 once: the native addon (never its pure-JS fallback), else WebAssembly. */
export async function useWasmSecp256k1(options: { native?: boolean } = {}): Promise<void> {
  if (options.native !== false) {
    try {
      const native = createRequire(import.meta.url)("secp256k1/bindings") as typeof Native;
      wasmRecover = (hash, signature, recoveryId, compressed) =>
        native.ecdsaRecover(signature, recoveryId, hash, compressed ?? true);
      wasmSign = (hash, privateKey) => {
        const { signature, recid } = native.ecdsaSign(hash, privateKey);
        return { signature, recoveryId: recid as 0 | 1 | 2 | 3 };
      };
      secp256k1Backend = "native";
      return;
    } catch {
      // No prebuilt addon for this platform: WebAssembly instead.
    }
  }
  const secp = await import("tiny-secp256k1");
  wasmRecover = secp.recover;
  wasmSign = secp.signRecoverable;
  secp256k1Backend = "wasm";
}

/** viem's account, signing with libsecp256k1 once loaded (~6x faster, same RFC 6979 low-s
 * signatures). */
export function settlementAccount(privateKey: Hex): LocalAccount {
  const account = privateKeyToAccount(privateKey);
  const keyBytes = hexToBytes(privateKey);
  return toAccount({
    address: account.address,
    signMessage: account.signMessage,
    signTypedData: account.signTypedData,
    async signTransaction(transaction, options) {
      const sign = wasmSign;
      if (!sign) return account.signTransaction(transaction, options);
      // Our settlement transactions: serialized here, each only once (the hot path).
      const encoded = options?.serializer
        ? undefined
        : encodeSettlementTransaction(transaction as SettlementTransaction);
      if (encoded) {
        const { signature, recoveryId } = sign(keccak256Bytes(encoded.unsigned), keyBytes);
        if (recoveryId === 0 || recoveryId === 1) {
          const signed = encoded.signed({
            r: signature.subarray(0, 32),
            s: signature.subarray(32, 64),
            yParity: recoveryId,
          });
          return hexOf(signed) as `0x02${string}`;
        }
      }
      const serializer = options?.serializer ?? serializeTransaction;
      const digest = keccak256(await serializer(transaction));
      const { signature, recoveryId } = sign(hexToBytes(digest), keyBytes);
      return serializer(transaction, {
        r: bytesToHex(signature.subarray(0, 32)),
        s: bytesToHex(signature.subarray(32, 64)),
        v: BigInt(27 + recoveryId),
        yParity: recoveryId,
      });
    },
  });
}

/** Who signed `digest` (65-byte r, s, v), or undefined; throws only when the node can't be
 * reached. */
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
        bytesOfHex(digest),
        bytes.subarray(0, 64),
        recoveryId as 0 | 1,
        false,
      );
      return publicKey ? addressOfPublicKey(publicKey) : undefined;
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

/** The checksummed address of an uncompressed public key (65 bytes, 0x04 first). */
export function addressOfPublicKey(publicKey: Uint8Array): Address {
  return checksumAddress(hexOf(keccak256Bytes(publicKey.subarray(1)).subarray(12)).slice(2));
}
