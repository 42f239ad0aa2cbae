/**
 * What the Solana devnet holds from its first start: a USDC-like mint (6 decimals, SPL Token) at
 * the Solana devnet USDC address, payers with SOL and test USDC in their associated token
 * accounts, a fee payer with SOL for the facilitator, and a payee with an (empty) associated token
 * account, since an `exact` payment transfers into an existing one.
 */
import type { Address } from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { associatedTokenAddress as ataOf } from "../exact/ata.js";
import { type SvmDevKey, svmDevKey } from "./keys.js";
import {
  encodeMint,
  encodeTokenAccount,
  MINT_SIZE,
  TOKEN_ACCOUNT_SIZE,
  TOKEN_PROGRAM,
} from "./token-layout.js";

/** Circle's USDC mint on Solana devnet (the asset @x402/svm pays with on devnet). */
export const DEVNET_USDC_MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" as Address;
export const USDC_DECIMALS = 6;
/** Each payer's test USDC: 1,000 USDC. */
export const PAYER_USDC_BALANCE = 1_000_000_000n;

const LAMPORTS_PER_SOL = 1_000_000_000n;
export const FEE_PAYER_LAMPORTS = 100n * LAMPORTS_PER_SOL;
export const PAYER_LAMPORTS = 10n * LAMPORTS_PER_SOL;
export const PAYEE_LAMPORTS = LAMPORTS_PER_SOL;

export const DEFAULT_PAYER_COUNT = 3;
const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;

export interface SvmDevnetKeys {
  feePayer: SvmDevKey;
  payers: SvmDevKey[];
  payee: SvmDevKey;
  mintAuthority: SvmDevKey;
}

export function devnetKeys(payerCount = DEFAULT_PAYER_COUNT): SvmDevnetKeys {
  return {
    feePayer: svmDevKey("fee-payer"),
    payers: Array.from({ length: payerCount }, (_, i) => svmDevKey(`payer-${i}`)),
    payee: svmDevKey("payee"),
    mintAuthority: svmDevKey("mint-authority"),
  };
}

/** The associated token account of `owner` for `mint` under `tokenProgram`. */
export async function associatedTokenAddress(
  owner: Address,
  mint: Address = DEVNET_USDC_MINT,
  tokenProgram: Address = TOKEN_PROGRAM,
): Promise<Address> {
  // One derivation, the one verify checks payees against.
  const address = await ataOf(owner, mint, tokenProgram);
  if (!address) throw new Error(`no associated token account for ${owner}`);
  return address as Address;
}

function setSystemAccount(svm: LiteSVM, address: Address, lamports: bigint): void {
  svm.setAccount({
    address,
    lamports: lamports as never,
    data: new Uint8Array(0),
    programAddress: SYSTEM_PROGRAM,
    executable: false,
    space: 0n,
  });
}

async function setTokenAccount(svm: LiteSVM, owner: Address, amount: bigint): Promise<void> {
  svm.setAccount({
    address: await associatedTokenAddress(owner),
    lamports: svm.minimumBalanceForRentExemption(BigInt(TOKEN_ACCOUNT_SIZE)) as never,
    data: encodeTokenAccount({ mint: DEVNET_USDC_MINT, owner, amount }),
    programAddress: TOKEN_PROGRAM,
    executable: false,
    space: BigInt(TOKEN_ACCOUNT_SIZE),
  });
}

/** Writes the mint, the funded accounts and the token accounts into a fresh runtime. */
export async function setUpDevnet(svm: LiteSVM, keys: SvmDevnetKeys): Promise<void> {
  svm.setAccount({
    address: DEVNET_USDC_MINT,
    lamports: svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE)) as never,
    data: encodeMint({
      mintAuthority: keys.mintAuthority.address,
      supply: PAYER_USDC_BALANCE * BigInt(keys.payers.length),
      decimals: USDC_DECIMALS,
      freezeAuthority: null,
    }),
    programAddress: TOKEN_PROGRAM,
    executable: false,
    space: BigInt(MINT_SIZE),
  });
  setSystemAccount(svm, keys.feePayer.address, FEE_PAYER_LAMPORTS);
  setSystemAccount(svm, keys.payee.address, PAYEE_LAMPORTS);
  setSystemAccount(svm, keys.mintAuthority.address, PAYEE_LAMPORTS);
  await setTokenAccount(svm, keys.payee.address, 0n);
  for (const payer of keys.payers) {
    setSystemAccount(svm, payer.address, PAYER_LAMPORTS);
    await setTokenAccount(svm, payer.address, PAYER_USDC_BALANCE);
  }
}
