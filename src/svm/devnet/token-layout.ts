/** The SPL Token layouts the devnet writes and parses (Token-2022's base ones; no extensions). */
import {
  type Address,
  getAddressCodec,
  getBooleanCodec,
  getNullableCodec,
  getStructCodec,
  getU8Codec,
  getU32Codec,
  getU64Codec,
  type ReadonlyUint8Array,
} from "@solana/kit";
import { decimalAmount } from "../../protocol/amounts.js";
import * as ids from "../exact/constants.js";
import { isTokenProgram } from "../exact/instructions.js";

export const TOKEN_PROGRAM = ids.TOKEN_PROGRAM as Address;
export const TOKEN_2022_PROGRAM = ids.TOKEN_2022_PROGRAM as Address;

export const MINT_SIZE = 82;
const TOKEN_ACCOUNT_SIZE = 165;

/** A `COption` as the token programs lay it out: a u32 tag, then the value or zeroes. */
const C_OPTION = { prefix: getU32Codec(), noneValue: "zeroes" } as const;
const optionalAddress = getNullableCodec(getAddressCodec(), C_OPTION);

const mintCodec = getStructCodec([
  ["mintAuthority", optionalAddress],
  ["supply", getU64Codec()],
  ["decimals", getU8Codec()],
  ["isInitialized", getBooleanCodec()],
  ["freezeAuthority", optionalAddress],
]);

const tokenAccountCodec = getStructCodec([
  ["mint", getAddressCodec()],
  ["owner", getAddressCodec()],
  ["amount", getU64Codec()],
  ["delegate", optionalAddress],
  ["state", getU8Codec()],
  // Set on a wrapped-SOL account: its rent-exempt reserve.
  ["isNative", getNullableCodec(getU64Codec(), C_OPTION)],
  ["delegatedAmount", getU64Codec()],
  ["closeAuthority", optionalAddress],
]);

type Mint = ReturnType<typeof decodeMint>;

export function encodeMint(fields: Omit<Mint, "isInitialized">): Uint8Array {
  return mintCodec.encode({ ...fields, isInitialized: true }) as Uint8Array;
}

export function encodeTokenAccount(fields: { mint: Address; owner: Address; amount: bigint }) {
  const account = { delegate: null, isNative: null, delegatedAmount: 0n, closeAuthority: null };
  // state 1: AccountState::Initialized.
  return tokenAccountCodec.encode({ ...fields, ...account, state: 1 }) as Uint8Array;
}

export function decodeMint(data: ReadonlyUint8Array) {
  return mintCodec.decode(data);
}

/** What a token program's account holds; Token-2022's longer ones say so at byte 165. */
export function tokenAccountKind(owner: string, data: ReadonlyUint8Array) {
  if (!isTokenProgram(owner)) return undefined;
  const kind = owner === TOKEN_2022_PROGRAM ? data[TOKEN_ACCOUNT_SIZE] : undefined;
  if (data.length === TOKEN_ACCOUNT_SIZE || kind === 2) return "account";
  if (data.length === MINT_SIZE || kind === 1) return "mint";
  return undefined;
}

/** A token amount as RPC nodes show it (`uiAmount` a float, `uiAmountString` exact). */
function tokenAmount(amount: bigint, decimals: number) {
  const uiAmountString = decimalAmount(amount, decimals);
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

const STATES = ["uninitialized", "initialized", "frozen"] as const;

/** A token program account's `jsonParsed` form; undefined for no mint or token account (base64). */
export function parseTokenAccountData(
  owner: string,
  data: Uint8Array,
  mintDecimals: (mint: Address) => number | undefined,
) {
  const kind = tokenAccountKind(owner, data);
  const program = owner === TOKEN_PROGRAM ? "spl-token" : "spl-token-2022";
  if (kind === "account") {
    const account = tokenAccountCodec.decode(data);
    const decimals = mintDecimals(account.mint);
    if (decimals === undefined) return undefined;
    const info: Record<string, unknown> = {
      isNative: account.isNative !== null,
      mint: account.mint,
      owner: account.owner,
      state: STATES[account.state] ?? "uninitialized",
      tokenAmount: tokenAmount(account.amount, decimals),
    };
    if (account.delegate) {
      info.delegate = account.delegate;
      info.delegatedAmount = tokenAmount(account.delegatedAmount, decimals);
    }
    if (account.closeAuthority) info.closeAuthority = account.closeAuthority;
    if (account.isNative !== null) info.rentExemptReserve = tokenAmount(account.isNative, 9);
    return { program, parsed: { info, type: "account" }, space: data.length };
  }
  if (kind === "mint") {
    const { decimals, freezeAuthority, isInitialized, mintAuthority, supply } = decodeMint(data);
    const info = { decimals, freezeAuthority, isInitialized, mintAuthority, supply: `${supply}` };
    return { program, parsed: { info, type: "mint" }, space: data.length };
  }
  return undefined;
}
