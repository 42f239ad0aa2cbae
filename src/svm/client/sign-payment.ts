/** A Solana `exact` payment signed as the official @x402/svm 2.27 client signs it. */
import { randomBytes } from "node:crypto";
import {
  AccountRole,
  type AccountSignerMeta,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  createKeyPairSignerFromBytes,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getU32Encoder,
  getU64Encoder,
  type Instruction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import { createClient } from "viem";
import { DEFAULT_RESOURCE, type RequirementsJson } from "../../protocol/client-request.js";
import { jsonRpcTransport } from "../../rpc/json-rpc.js";
import { decodeMint, tokenAccountKind } from "../devnet/token-layout.js";
import { associatedTokenAddress } from "../exact/ata.js";
import { COMPUTE_BUDGET_PROGRAM, MEMO_PROGRAM } from "../exact/constants.js";
import { isTokenProgram } from "../exact/instructions.js";

/** The official client's DEFAULT_COMPUTE_UNIT_LIMIT and _PRICE_MICROLAMPORTS. */
const COMPUTE_UNITS = 20_000;
const MICROLAMPORTS = 1n;
/** The official client refuses a seller's memo longer than this (MAX_MEMO_BYTES). */
export const MAX_MEMO_BYTES = 256;

/** One JSON-RPC call to the cluster, answering its `result` (throws on an error answer). */
export type SvmCall = (method: string, params: unknown[]) => Promise<unknown>;

/** JSON-RPC to `rpcUrl`, for callers without a registry's client (the devnet's request file). */
export function svmCallTo(rpcUrl: string): SvmCall {
  const client = createClient({ transport: jsonRpcTransport(rpcUrl) });
  return (method, params) => client.request({ method, params } as never);
}

/** The cluster's latest blockhash, at `confirmed` (as the official client's RPC asks). */
export async function latestBlockhash(call: SvmCall): Promise<string> {
  const result = (await call("getLatestBlockhash", [{ commitment: "confirmed" }])) as {
    value?: { blockhash?: unknown };
  };
  const blockhash = result?.value?.blockhash;
  if (typeof blockhash !== "string") throw new Error("getLatestBlockhash answered no blockhash");
  return blockhash;
}

export interface SvmMint {
  readonly address: string;
  /** The SPL Token or Token-2022 program that owns the mint. */
  readonly tokenProgram: string;
  readonly decimals: number;
  /** The mint authority, when the mint has one. */
  readonly mintAuthority: string | undefined;
}

/** Why an account is not a mint the `exact` scheme pays with. */
export class NotAMint extends Error {
  override readonly name = "NotAMint";
}

/** The mint's token program and decimals, from its account; NotAMint when it is no mint. */
export async function readMint(call: SvmCall, mint: string): Promise<SvmMint> {
  const result = (await call("getAccountInfo", [
    mint,
    { encoding: "base64", commitment: "confirmed" },
  ])) as { value?: { owner?: unknown; data?: unknown } | null };
  const account = result?.value;
  if (!account) throw new NotAMint("there is no account at this address");
  const owner = String(account.owner);
  if (!isTokenProgram(owner)) {
    throw new NotAMint(`the account is owned by ${owner}, not a token program`);
  }
  const encoded = Array.isArray(account.data) ? account.data[0] : undefined;
  const data = typeof encoded === "string" ? Buffer.from(encoded, "base64") : Buffer.alloc(0);
  const fields = tokenAccountKind(owner, data) === "mint" ? decodeMint(data) : undefined;
  if (!fields?.isInitialized) {
    throw new NotAMint("the account is no initialised mint (a token account?)");
  }
  return {
    address: mint,
    tokenProgram: owner,
    decimals: fields.decimals,
    mintAuthority: fields.mintAuthority ?? undefined,
  };
}

const u32 = getU32Encoder();
const u64 = getU64Encoder();

/** `owner`'s associated token account for `mint`: the one verify checks payees against. */
export async function ataOf(owner: string, mint: string, tokenProgram: string): Promise<Address> {
  const address = await associatedTokenAddress(owner, mint, tokenProgram);
  if (!address) throw new Error(`no associated token account for ${owner}`);
  return address as Address;
}

// The payer's address and base64 wire transaction, signed by the payer only. `memo`: the seller's
// `extra.memo` (the caller checks its length); without one, 16 random bytes in hex.
export async function signSvmTransfer(terms: {
  /** The payer's 64-byte secret key (seed ‖ public key). */
  readonly payerSecretKey: Uint8Array;
  /** The facilitator's fee payer (`extra.feePayer`). */
  readonly feePayer: string;
  readonly mint: SvmMint;
  /** The payee's wallet (its associated token account receives). */
  readonly payTo: string;
  /** Atomic units. */
  readonly amount: bigint;
  readonly blockhash: string;
  readonly memo?: string | undefined;
}): Promise<{ payer: string; transaction: string }> {
  const signer = await createKeyPairSignerFromBytes(terms.payerSecretKey);
  const { mint } = terms;
  const computeBudget = COMPUTE_BUDGET_PROGRAM as Address;
  const [source, destination] = await Promise.all(
    [signer.address, terms.payTo].map((owner) => ataOf(owner, mint.address, mint.tokenProgram)),
  );
  const instructions: Instruction[] = [
    { programAddress: computeBudget, data: Uint8Array.from([2, ...u32.encode(COMPUTE_UNITS)]) },
    { programAddress: computeBudget, data: Uint8Array.from([3, ...u64.encode(MICROLAMPORTS)]) },
    {
      programAddress: mint.tokenProgram as Address,
      accounts: [
        { address: source as Address, role: AccountRole.WRITABLE },
        { address: mint.address as Address, role: AccountRole.READONLY },
        { address: destination as Address, role: AccountRole.WRITABLE },
        // The payer signs as the authority; @solana/kit finds its signer in this meta.
        { address: signer.address, role: AccountRole.READONLY_SIGNER, signer } as AccountSignerMeta,
      ],
      // TransferChecked: discriminator 12, amount (u64 LE), decimals.
      data: Uint8Array.from([12, ...u64.encode(terms.amount), mint.decimals]),
    },
    {
      programAddress: MEMO_PROGRAM as Address,
      accounts: [],
      data: new TextEncoder().encode(terms.memo ?? randomBytes(16).toString("hex")),
    },
  ];
  // A lifetime's last valid height is no part of the signed bytes.
  const lifetime = { blockhash: terms.blockhash as Blockhash, lastValidBlockHeight: 0n };
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(terms.feePayer as Address, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
  );
  const signed = await partiallySignTransactionMessageWithSigners(message);
  return { payer: signer.address, transaction: getBase64EncodedWireTransaction(signed) };
}

/** The x402 PaymentPayload around a signed transaction, in the official client's v1 or v2 shape. */
export function svmPaymentPayload(
  x402Version: 1 | 2,
  requirements: RequirementsJson,
  transaction: string,
  resource: { url: string; description?: string; mimeType?: string } = DEFAULT_RESOURCE,
) {
  return x402Version === 2
    ? { x402Version: 2, resource, accepted: requirements, payload: { transaction } }
    : {
        x402Version: 1,
        scheme: requirements.scheme,
        network: requirements.network,
        payload: { transaction },
      };
}
