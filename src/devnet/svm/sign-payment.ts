/**
 * A signed Solana `exact` payment for the devnet's request file, made the way the official x402
 * SVM client (@x402/svm 2.27, ExactSvmScheme.createPaymentPayload) makes it, on @solana/kit alone
 * so the CLI needs no x402 SDK at run time: a v0 message with the facilitator as fee payer,
 * [SetComputeUnitLimit 20,000, SetComputeUnitPrice 1 µlamport, TransferChecked payer ATA → payee
 * ATA, Memo of 16 random bytes in hex], signed by the payer only (the fee payer signs at settle).
 * test/devnet-svm.test.ts has the official facilitator verify it.
 */
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
  type Instruction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import * as ids from "../../schemes/exact-svm/constants.js";
import type { SvmDevnet } from "./index.js";
import { type SvmDevKey, secretKeyBytes } from "./keys.js";
import { associatedTokenAddress } from "./setup.js";
import { TOKEN_PROGRAM } from "./token-layout.js";

const COMPUTE_BUDGET_PROGRAM = ids.COMPUTE_BUDGET_PROGRAM as Address;
const MEMO_PROGRAM = ids.MEMO_PROGRAM as Address;
/** The official client's defaults (DEFAULT_COMPUTE_UNIT_LIMIT / _PRICE_MICROLAMPORTS). */
const COMPUTE_UNIT_LIMIT = 20_000;
const COMPUTE_UNIT_PRICE_MICROLAMPORTS = 1n;

export interface SvmRequestOptions {
  /** Token units (default 10,000: 0.01 USDC). */
  readonly amount?: bigint;
  readonly resource?: string;
}

const u32 = (value: number) => {
  const data = Buffer.alloc(4);
  data.writeUInt32LE(value);
  return data;
};
const u64 = (value: bigint) => {
  const data = Buffer.alloc(8);
  data.writeBigUInt64LE(value);
  return data;
};

/** The devnet's latest blockhash (at `confirmed`, as the official client's RPC asks). */
async function latestBlockhash(rpcUrl: string) {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "getLatestBlockhash",
      params: [{ commitment: "confirmed" }],
    }),
  });
  const body = (await response.json()) as {
    result?: { value: { blockhash: string; lastValidBlockHeight: number } };
  };
  if (!body.result) throw new Error(`the Solana devnet gave no blockhash: ${JSON.stringify(body)}`);
  return {
    blockhash: body.result.value.blockhash as Blockhash,
    lastValidBlockHeight: BigInt(body.result.value.lastValidBlockHeight),
  };
}

/**
 * What signing needs of a devnet: its RPC, network, fee payer, payee and mint (a devnet started in
 * another process is described by these too: its keys are the well-known devnetKeys()).
 */
export type SvmDevnetParts = Pick<SvmDevnet, "rpcUrl" | "network" | "feePayer" | "payee" | "mint">;

/** x402 v2 requirements for the devnet's test USDC, the devnet's fee payer in `extra`. */
export function svmSampleRequirements(devnet: SvmDevnetParts, amount = 10_000n) {
  return {
    scheme: "exact",
    network: devnet.network,
    amount: amount.toString(),
    asset: devnet.mint.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: { feePayer: devnet.feePayer.address },
  };
}

/** A request file body (reference dialect, x402 v2): `{ payload, requirements }`. */
export async function signSvmSampleRequest(
  devnet: SvmDevnetParts,
  payer: SvmDevKey,
  options: SvmRequestOptions = {},
) {
  const amount = options.amount ?? 10_000n;
  const requirements = svmSampleRequirements(devnet, amount);
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(payer));
  const mint = devnet.mint.address;
  // The payer signs as the transfer's authority; @solana/kit finds its signer in this meta.
  const authority: AccountSignerMeta = {
    address: signer.address,
    role: AccountRole.READONLY_SIGNER,
    signer,
  };
  const instructions: Instruction[] = [
    {
      programAddress: COMPUTE_BUDGET_PROGRAM,
      data: Uint8Array.from([2, ...u32(COMPUTE_UNIT_LIMIT)]),
    },
    {
      programAddress: COMPUTE_BUDGET_PROGRAM,
      data: Uint8Array.from([3, ...u64(COMPUTE_UNIT_PRICE_MICROLAMPORTS)]),
    },
    {
      programAddress: TOKEN_PROGRAM,
      accounts: [
        { address: await associatedTokenAddress(payer.address, mint), role: AccountRole.WRITABLE },
        { address: mint, role: AccountRole.READONLY },
        {
          address: await associatedTokenAddress(devnet.payee.address, mint),
          role: AccountRole.WRITABLE,
        },
        authority,
      ],
      // TransferChecked: discriminator 12, amount (u64 LE), decimals.
      data: Uint8Array.from([12, ...u64(amount), devnet.mint.decimals]),
    },
    {
      programAddress: MEMO_PROGRAM,
      accounts: [],
      data: new TextEncoder().encode(randomBytes(16).toString("hex")),
    },
  ];
  const lifetime = await latestBlockhash(devnet.rpcUrl);
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(devnet.feePayer.address, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
  );
  const signed = await partiallySignTransactionMessageWithSigners(message);
  const payload = {
    x402Version: 2,
    resource: { url: options.resource ?? "http://localhost:4021/weather" },
    accepted: requirements,
    payload: { transaction: getBase64EncodedWireTransaction(signed) },
  };
  return { payload, requirements };
}
