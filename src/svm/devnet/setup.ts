/** The devnet's first state: USDC and a Token-2022 token, funded payers, a fee payer, a payee. */
import type { Address } from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { ataOf, type SvmMint } from "../client/sign-payment.js";
import { svmDevKey } from "./keys.js";
import {
  encodeMint,
  encodeTokenAccount,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from "./token-layout.js";

/** Circle's USDC mint on Solana devnet (the asset @x402/svm pays with on devnet). */
export const DEVNET_USDC_MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" as Address;
export const USDC_DECIMALS = 6;
/** The Token-2022 test token, at a dev key's fixed address, with no extensions. */
export const DEVNET_TOKEN_2022_MINT = svmDevKey("token-2022-mint").address;
export const TOKEN_2022_DECIMALS = 6;
/** Each payer's test USDC, and as many of the Token-2022 test token: 1,000 tokens. */
export const PAYER_USDC_BALANCE = 1_000_000_000n;

const LAMPORTS_PER_SOL = 1_000_000_000n;
const FEE_PAYER_LAMPORTS = 100n * LAMPORTS_PER_SOL;
const PAYER_LAMPORTS = 10n * LAMPORTS_PER_SOL;
const PAYEE_LAMPORTS = LAMPORTS_PER_SOL;

export const DEFAULT_PAYER_COUNT = 3;
const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;

/** Whether this mint, read from a cluster, is the devnet's test USDC (Circle's has its authority). */
export function isSvmDevnetMint(mint: SvmMint): boolean {
  return (
    mint.address === DEVNET_USDC_MINT && mint.mintAuthority === svmDevKey("mint-authority").address
  );
}

export function devnetKeys(payerCount = DEFAULT_PAYER_COUNT) {
  return {
    feePayer: svmDevKey("fee-payer"),
    payers: Array.from({ length: payerCount }, (_, i) => svmDevKey(`payer-${i}`)),
    payee: svmDevKey("payee"),
    mintAuthority: svmDevKey("mint-authority"),
  };
}

/** The associated token account of `owner` for `mint` (default: test USDC) under `tokenProgram`. */
export const associatedTokenAddress = (
  owner: Address,
  mint: Address = DEVNET_USDC_MINT,
  tokenProgram: Address = TOKEN_PROGRAM,
) => ataOf(owner, mint, tokenProgram);

/** Writes an account; rent-exempt unless `lamports` says otherwise. */
function put(
  svm: LiteSVM,
  address: Address,
  programAddress: Address,
  data: Uint8Array,
  lamports = svm.minimumBalanceForRentExemption(BigInt(data.length)),
): void {
  const account = { address, data, programAddress, executable: false, space: BigInt(data.length) };
  svm.setAccount({ ...account, lamports: lamports as never });
}

/** The devnet's tokens: each mint, its program and decimals. */
const TOKENS = [
  { mint: DEVNET_USDC_MINT, program: TOKEN_PROGRAM, decimals: USDC_DECIMALS },
  { mint: DEVNET_TOKEN_2022_MINT, program: TOKEN_2022_PROGRAM, decimals: TOKEN_2022_DECIMALS },
] as const;

/** Writes the mints, the funded accounts and the token accounts into a fresh runtime. */
export async function setUpDevnet(
  svm: LiteSVM,
  keys: ReturnType<typeof devnetKeys>,
): Promise<void> {
  const none = new Uint8Array(0);
  put(svm, keys.feePayer.address, SYSTEM_PROGRAM, none, FEE_PAYER_LAMPORTS);
  put(svm, keys.payee.address, SYSTEM_PROGRAM, none, PAYEE_LAMPORTS);
  put(svm, keys.mintAuthority.address, SYSTEM_PROGRAM, none, PAYEE_LAMPORTS);
  for (const payer of keys.payers) put(svm, payer.address, SYSTEM_PROGRAM, none, PAYER_LAMPORTS);
  for (const token of TOKENS) {
    const mint = encodeMint({
      mintAuthority: keys.mintAuthority.address,
      supply: PAYER_USDC_BALANCE * BigInt(keys.payers.length),
      decimals: token.decimals,
      freezeAuthority: null,
    });
    put(svm, token.mint, token.program, mint);
    const hold = async (owner: Address, amount: bigint) => {
      const account = await associatedTokenAddress(owner, token.mint, token.program);
      put(svm, account, token.program, encodeTokenAccount({ mint: token.mint, owner, amount }));
    };
    await hold(keys.payee.address, 0n);
    for (const payer of keys.payers) await hold(payer.address, PAYER_USDC_BALANCE);
  }
}
