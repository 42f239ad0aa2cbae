/** Reading Solana JSON-RPC params, each refused with -32602 as nodes do. */
import { type Address, getBase58Encoder, isAddress } from "@solana/kit";
import type { Commitment } from "../exact/rpc.js";
import { decodeWireTransaction } from "./cluster.js";
import { invalidParams } from "./rpc-server.js";

export type Config = Record<string, unknown>;

export function config(params: unknown[], index: number): Config {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw invalidParams("Invalid params: config must be an object");
  return value as Config;
}

export function commitmentOf(cfg: Config): Commitment {
  const value = cfg.commitment;
  if (value === undefined || value === null) return "finalized";
  if (value === "processed" || value === "confirmed" || value === "finalized") return value;
  // Deprecated names real nodes still accept.
  if (value === "recent") return "processed";
  if (value === "single" || value === "singleGossip") return "confirmed";
  if (value === "root" || value === "max") return "finalized";
  throw invalidParams(`Invalid params: Invalid commitment: ${String(value)}`);
}

export function address(params: unknown[], index: number): Address {
  const value = params[index];
  if (typeof value !== "string" || !isAddress(value)) throw invalidParams("Invalid param: Invalid");
  return value;
}

export function count(value: unknown, name: string): bigint {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw invalidParams(`Invalid params: ${name} must be an unsigned integer`);
  return BigInt(value);
}

export function bytesOf(value: unknown, encoding: unknown, what: string): Uint8Array {
  if (typeof value !== "string") throw invalidParams(`Invalid params: ${what} must be a string`);
  try {
    if (encoding === "base64") return new Uint8Array(Buffer.from(value, "base64"));
    if (encoding === undefined || encoding === "base58")
      return new Uint8Array(getBase58Encoder().encode(value));
  } catch {
    throw invalidParams(`invalid base58 encoding: ${what}`);
  }
  throw invalidParams(`Invalid params: unsupported encoding ${String(encoding)}`);
}

export function decodeTransaction(params: unknown[], cfg: Config) {
  const bytes = bytesOf(params[0], cfg.encoding, "transaction");
  try {
    return decodeWireTransaction(bytes);
  } catch {
    throw invalidParams(
      "failed to deserialize solana_transaction::versioned::VersionedTransaction",
    );
  }
}

export function describe(err: unknown): string {
  if (typeof err === "string") return err;
  const ix = (err as { InstructionError?: [number, unknown] }).InstructionError;
  if (ix) return `Error processing Instruction ${ix[0]}: ${JSON.stringify(ix[1])}`;
  return JSON.stringify(err);
}
