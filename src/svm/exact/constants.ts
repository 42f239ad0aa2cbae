/**
 * Program ids and limits of the x402 `exact` scheme on Solana. The values are the ones the
 * official `@x402/svm` 2.27.0 facilitator uses (its `src/constants.ts` and
 * `src/exact/facilitator/scheme.ts`, read in the published `dist/esm` chunks).
 */

export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
export const MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/** Phantom's wallet-protection assertions: allowed after the transfer, like a memo. */
export const LIGHTHOUSE_PROGRAM = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";
export const ADDRESS_LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111";

/**
 * The most address lookup tables, and accounts loaded through them, a payment may use; past
 * either it is refused before any table is read (the reference has no cap). An exact payment
 * names about ten accounts in all, so a client that compresses it needs one table and a few
 * lookups; the caps bound what one verify reads from the cluster (one getMultipleAccounts call).
 */
export const MAX_LOOKUP_TABLES = 4;
export const MAX_LOOKUP_ACCOUNTS = 32;

/** The highest compute-unit price accepted, in micro-lamports per unit (the reference's default). */
export const MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS = 5_000_000n;

/**
 * The highest compute-unit limit accepted. The reference has no default cap (only an option,
 * `maxComputeUnits`); ours bounds what one settlement can cost the fee payer: at the price cap,
 * 200,000 units cost at most 1,000,000 lamports (0.001 SOL) in priority fees. The official client
 * asks for 20,000.
 */
export const DEFAULT_MAX_COMPUTE_UNITS = 200_000;

/** Instructions an `exact` transaction may have: limit, price, transfer, then up to 3 (v1) or 4 (v2) memo/Lighthouse. */
export const MIN_INSTRUCTIONS = 3;
export const MAX_INSTRUCTIONS = { 1: 6, 2: 7 } as const;

/** What each required signature costs the fee payer (Solana's fixed base fee). */
export const LAMPORTS_PER_SIGNATURE = 5_000n;

/**
 * The most lamports one settlement may cost the fee payer by default: base fees and the priority
 * fee its compute budget asks for. The official client's payment costs 10,001 (two signatures,
 * 20,000 units at 1 micro-lamport); at the reference's price cap its 20,000 units cost 110,000.
 */
export const DEFAULT_MAX_FEE_LAMPORTS = 150_000n;

/**
 * The transaction message versions advertised on /supported (`extra.transactionVersions`), as the
 * upstream change after 2.27 advertises them: version 0, the one the official client builds.
 * Legacy messages are still taken (2.27 takes them, and upstream keeps them for older clients) but
 * never advertised; any other version (1, SIMD-0385's, and up) is refused as
 * `unsupported_transaction_version` before anything else of it is read.
 */
export const TRANSACTION_VERSIONS: readonly number[] = [0];

/**
 * The smart-wallet path (smart-wallet.ts), off unless switched on. The programs a smart-wallet
 * payment may call at the top level besides the compute budget and memos: the reference's
 * DEFAULT_SMART_WALLET_ALLOWED_PROGRAMS (Squads Multisig v4, Squads Smart Account, Swig legacy
 * and v2, SPL Governance, Metaplex Core, Lighthouse).
 */
export const DEFAULT_SMART_WALLET_PROGRAMS: readonly string[] = [
  "SQDS4ep65T869zMMBKyuUq6aD6EgTu8psMjkvj52pCf",
  "SMRTzfY6DfH5ik3TKiyLFfXexV8uSG3d2UksSCYdunG",
  "SWiGmQedKzMz1tiTqoJCWeGDnGXfNBp2PkXLkpCAtQo",
  "swigypWHEksbC64pWKwah1WTeh9JXwx8H1rJHLdbQMB",
  "GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw",
  "CoREENxT6tW1HoK8ypY1SxRMZTcVPm7R94rH4PZNhX7d",
  LIGHTHOUSE_PROGRAM,
];

/** The smart-wallet path's compute caps: the reference's defaults. */
export const DEFAULT_SMART_WALLET_MAX_COMPUTE_UNITS = 400_000;
export const DEFAULT_SMART_WALLET_MAX_PRIORITY_FEE = 50_000n;

/**
 * The compute-unit limit the runtime gives a transaction without SetComputeUnitLimit: this many
 * per instruction other than the compute budget's, up to MAX_TRANSACTION_COMPUTE_UNITS.
 */
export const DEFAULT_UNITS_PER_INSTRUCTION = 200_000;
export const MAX_TRANSACTION_COMPUTE_UNITS = 1_400_000;
