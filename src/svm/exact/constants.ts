/** Program ids and limits of `exact` on Solana, as the official `@x402/svm` 2.27.0 uses them. */
export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
export const MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/** Phantom's wallet-protection assertions: allowed after the transfer, like a memo. */
export const LIGHTHOUSE_PROGRAM = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";
export const ADDRESS_LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111";

/** Caps on lookup tables and the accounts loaded through them (the reference has none): they bound one verify's reads. */
export const MAX_LOOKUP_TABLES = 4;
export const MAX_LOOKUP_ACCOUNTS = 32;

/** The highest compute-unit price accepted, in micro-lamports per unit (the reference's default). */
export const MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS = 5_000_000n;

/** The highest compute-unit limit accepted (the reference has no default): 0.001 SOL at the price cap. */
export const DEFAULT_MAX_COMPUTE_UNITS = 200_000;

/** Instructions an `exact` transaction may have: limit, price, transfer, then up to 3 (v1) or 4 (v2) memo/Lighthouse. */
export const MIN_INSTRUCTIONS = 3;
export const MAX_INSTRUCTIONS = { 1: 6, 2: 7 } as const;

/** What each required signature costs the fee payer (Solana's fixed base fee). */
export const LAMPORTS_PER_SIGNATURE = 5_000n;

/** The most lamports one settlement may cost the fee payer (the official client's costs 10,001). */
export const DEFAULT_MAX_FEE_LAMPORTS = 150_000n;

/** Message versions advertised on /supported (as upstream after 2.27); legacy is taken, not advertised. */
export const TRANSACTION_VERSIONS: readonly number[] = [0];

/** The reference's DEFAULT_SMART_WALLET_ALLOWED_PROGRAMS: Squads v4 and Smart Account, Swig, Governance, Core, Lighthouse. */
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

/** The runtime's limit without SetComputeUnitLimit: this per non-budget instruction, up to the max. */
export const DEFAULT_UNITS_PER_INSTRUCTION = 200_000;
export const MAX_TRANSACTION_COMPUTE_UNITS = 1_400_000;
