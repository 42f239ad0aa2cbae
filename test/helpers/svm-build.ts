/**
 * Solana test payments without a chain: a stub JSON-RPC endpoint that answers only
 * `getAccountInfo` for mints (all the official `@x402/svm` client asks when the requirements carry
 * `extra.recentBlockhash`), and a builder that makes the same transaction the official client makes
 * (compute limit, compute price, TransferChecked, memo) with any part changed.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  getAddressDecoder,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type TransactionSigner,
} from "@solana/kit";
import { associatedTokenAddress } from "../../src/svm/exact/ata.js";
import {
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAM,
  TOKEN_PROGRAM,
} from "../../src/svm/exact/constants.js";

export function randomAddress(): Address {
  return getAddressDecoder().decode(randomBytes(32));
}

/** The 82-byte SPL mint layout: authority, supply, decimals, initialized, no freeze authority. */
function mintData(decimals: number): string {
  const data = Buffer.alloc(82);
  data.writeUInt32LE(1, 0);
  Buffer.from(getAddressEncoder().encode(randomAddress())).copy(data, 4);
  data.writeBigUInt64LE(1_000_000_000_000n, 36);
  data.writeUInt8(decimals, 44);
  data.writeUInt8(1, 45);
  return data.toString("base64");
}

export interface MintRpc {
  readonly url: string;
  /** The methods asked so far, in order. */
  readonly served: readonly string[];
  close(): Promise<void>;
}

/**
 * Answers getAccountInfo for the given mints (address → owning token program, 6 decimals) and
 * getLatestBlockhash with `blockhash` (the v1 client always asks; v2 reads extra.recentBlockhash).
 */
export async function startMintRpc(
  mints: Readonly<Record<string, string>>,
  blockhash: string,
): Promise<MintRpc> {
  const served: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      const owner = call.method === "getAccountInfo" ? mints[String(call.params[0])] : undefined;
      const result =
        call.method === "getLatestBlockhash"
          ? { context: { slot: 1 }, value: { blockhash, lastValidBlockHeight: 1_000 } }
          : call.method !== "getAccountInfo"
            ? undefined
            : {
                context: { slot: 1 },
                value: owner
                  ? {
                      data: [mintData(6), "base64"],
                      executable: false,
                      lamports: 1_461_600,
                      owner,
                      rentEpoch: 0,
                      space: 82,
                    }
                  : null,
              };
      served.push(call.method);
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify(
          result
            ? { jsonrpc: "2.0", id: call.id, result }
            : { jsonrpc: "2.0", id: call.id, error: { code: -32601, message: "not served" } },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface BuildOptions {
  readonly payer: TransactionSigner;
  /** The transaction's fee payer (not signed here: the facilitator signs at settle). */
  readonly feePayer: Address;
  readonly mint: Address;
  readonly payTo: Address;
  readonly amount: bigint;
  readonly blockhash: string;
  readonly tokenProgram?: Address;
  readonly computeUnits?: number;
  readonly microLamports?: bigint;
  readonly memo?: string;
  /** Who authorises the transfer (the payer unless changed). */
  readonly authority?: TransactionSigner;
  /** Instructions appended after the memo. */
  readonly extra?: readonly Instruction[];
  /** The transfer's source account (the authority's associated token account unless changed). */
  readonly source?: Address;
  /** Rewrites the instruction list (reorder, drop, replace). */
  readonly transform?: (instructions: Instruction[]) => Instruction[];
  /** Moves these non-signer accounts into an address lookup table at this address. */
  readonly lookupTable?: { readonly address: Address; readonly addresses: readonly Address[] };
  /** The message's version: 0 (the official client's) unless changed. */
  readonly version?: "legacy" | 0 | 1;
}

function u32(value: number): Uint8Array {
  const data = Buffer.alloc(4);
  data.writeUInt32LE(value);
  return data;
}

function u64(value: bigint): Uint8Array {
  const data = Buffer.alloc(8);
  data.writeBigUInt64LE(value);
  return data;
}

/** The official client's layout, built with @solana/kit and hand-encoded instruction data. */
export async function buildPayment(options: BuildOptions): Promise<string> {
  const tokenProgram = options.tokenProgram ?? (TOKEN_PROGRAM as Address);
  const authority = options.authority ?? options.payer;
  const source =
    options.source ?? (await associatedTokenAddress(authority.address, options.mint, tokenProgram));
  const destination = await associatedTokenAddress(options.payTo, options.mint, tokenProgram);
  if (!source || !destination) throw new Error("no associated token account");
  const authorityMeta =
    authority.address === options.feePayer
      ? { address: authority.address, role: AccountRole.READONLY_SIGNER }
      : { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority };
  const layout: Instruction[] = [
    {
      programAddress: COMPUTE_BUDGET_PROGRAM as Address,
      data: Uint8Array.from([2, ...u32(options.computeUnits ?? 20_000)]),
    },
    {
      programAddress: COMPUTE_BUDGET_PROGRAM as Address,
      data: Uint8Array.from([3, ...u64(options.microLamports ?? 1n)]),
    },
    {
      programAddress: tokenProgram,
      accounts: [
        { address: source as Address, role: AccountRole.WRITABLE },
        { address: options.mint, role: AccountRole.READONLY },
        { address: destination as Address, role: AccountRole.WRITABLE },
        authorityMeta,
      ],
      data: Uint8Array.from([12, ...u64(options.amount), 6]),
    },
    {
      programAddress: MEMO_PROGRAM as Address,
      accounts: [],
      data: new TextEncoder().encode(options.memo ?? randomBytes(16).toString("hex")),
    },
    ...(options.extra ?? []),
  ];
  const instructions = options.transform ? options.transform(layout) : layout;
  const table = options.lookupTable;
  const message = pipe(
    // Typed as version 0 throughout: the kit builds and signs the others the same way.
    createTransactionMessage({ version: (options.version ?? 0) as 0 }),
    (m) => setTransactionMessageFeePayer(options.feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: options.blockhash as Blockhash, lastValidBlockHeight: 1_000n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) =>
      table
        ? compressTransactionMessageUsingAddressLookupTables(m, {
            [table.address]: [...table.addresses],
          })
        : m,
  );
  const signed = await partiallySignTransactionMessageWithSigners(message);
  return getBase64EncodedWireTransaction(signed);
}
