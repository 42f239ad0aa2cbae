/**
 * What the Solana devnet holds from its first start: a USDC-like mint (6 decimals, SPL Token) at
 * the Solana devnet USDC address, a Token-2022 test token (6 decimals, no extensions), payers with
 * SOL and both tokens in their associated token accounts, a fee payer with SOL for the
 * facilitator, and a payee with (empty) associated token accounts, since an `exact` payment
 * transfers into an existing one.
 */
import type { Address } from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { associatedTokenAddress as ataOf } from "../exact/ata.js";
import { type SvmDevKey, svmDevKey } from "./keys.js";
import {
  encodeMint,
  encodeTokenAccount,
  MINT_SIZE,
  TOKEN_2022_PROGRAM,
  TOKEN_ACCOUNT_SIZE,
  TOKEN_PROGRAM,
} from "./token-layout.js";

/** Circle's USDC mint on Solana devnet (the asset @x402/svm pays with on devnet). */
export const DEVNET_USDC_MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" as Address;
export const USDC_DECIMALS = 6;
/**
 * The Token-2022 test token: a mint of the Token-2022 program at a fixed address of its own (a dev
 * key's, so the same on every run), 6 decimals, the base layout with no extensions.
 */
export const DEVNET_TOKEN_2022_MINT = svmDevKey("token-2022-mint").address;
export const TOKEN_2022_DECIMALS = 6;
/** Each payer's test USDC, and as many of the Token-2022 test token: 1,000 tokens. */
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

/** The devnet's tokens: each mint, its program and decimals. */
const TOKENS = [
  { mint: DEVNET_USDC_MINT, program: TOKEN_PROGRAM, decimals: USDC_DECIMALS },
  { mint: DEVNET_TOKEN_2022_MINT, program: TOKEN_2022_PROGRAM, decimals: TOKEN_2022_DECIMALS },
] as const;

async function setTokenAccount(
  svm: LiteSVM,
  token: (typeof TOKENS)[number],
  owner: Address,
  amount: bigint,
): Promise<void> {
  svm.setAccount({
    address: await associatedTokenAddress(owner, token.mint, token.program),
    lamports: svm.minimumBalanceForRentExemption(BigInt(TOKEN_ACCOUNT_SIZE)) as never,
    data: encodeTokenAccount({ mint: token.mint, owner, amount }),
    programAddress: token.program,
    executable: false,
    space: BigInt(TOKEN_ACCOUNT_SIZE),
  });
}

/** Writes the mints, the funded accounts and the token accounts into a fresh runtime. */
export async function setUpDevnet(svm: LiteSVM, keys: SvmDevnetKeys): Promise<void> {
  setSystemAccount(svm, keys.feePayer.address, FEE_PAYER_LAMPORTS);
  setSystemAccount(svm, keys.payee.address, PAYEE_LAMPORTS);
  setSystemAccount(svm, keys.mintAuthority.address, PAYEE_LAMPORTS);
  for (const payer of keys.payers) setSystemAccount(svm, payer.address, PAYER_LAMPORTS);
  for (const token of TOKENS) {
    svm.setAccount({
      address: token.mint,
      lamports: svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE)) as never,
      data: encodeMint({
        mintAuthority: keys.mintAuthority.address,
        supply: PAYER_USDC_BALANCE * BigInt(keys.payers.length),
        decimals: token.decimals,
        freezeAuthority: null,
      }),
      programAddress: token.program,
      executable: false,
      space: BigInt(MINT_SIZE),
    });
    await setTokenAccount(svm, token, keys.payee.address, 0n);
    for (const payer of keys.payers) {
      await setTokenAccount(svm, token, payer.address, PAYER_USDC_BALANCE);
    }
  }
}
