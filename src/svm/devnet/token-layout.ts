/** The SPL Token layouts the devnet writes and parses (Token-2022's base ones; no extensions). */
import { type Address, getAddressDecoder, getAddressEncoder } from "@solana/kit";
import * as ids from "../exact/constants.js";

export const TOKEN_PROGRAM = ids.TOKEN_PROGRAM as Address;
export const TOKEN_2022_PROGRAM = ids.TOKEN_2022_PROGRAM as Address;

export const MINT_SIZE = 82;
export const TOKEN_ACCOUNT_SIZE = 165;

const addressEncoder = getAddressEncoder();
const addressDecoder = getAddressDecoder();

type Mint = ReturnType<typeof decodeMint>;

export function encodeMint(fields: Omit<Mint, "isInitialized">): Uint8Array {
  const data = new Uint8Array(MINT_SIZE);
  const view = new DataView(data.buffer);
  if (fields.mintAuthority) {
    view.setUint32(0, 1, true);
    data.set(addressEncoder.encode(fields.mintAuthority), 4);
  }
  view.setBigUint64(36, fields.supply, true);
  data[44] = fields.decimals;
  data[45] = 1; // initialized
  if (fields.freezeAuthority) {
    view.setUint32(46, 1, true);
    data.set(addressEncoder.encode(fields.freezeAuthority), 50);
  }
  return data;
}

export function encodeTokenAccount(fields: { mint: Address; owner: Address; amount: bigint }) {
  const data = new Uint8Array(TOKEN_ACCOUNT_SIZE);
  const view = new DataView(data.buffer);
  data.set(addressEncoder.encode(fields.mint), 0);
  data.set(addressEncoder.encode(fields.owner), 32);
  view.setBigUint64(64, fields.amount, true);
  data[108] = 1; // AccountState::Initialized
  return data;
}

function optionalAddress(data: Uint8Array, at: number): Address | null {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return view.getUint32(at, true) === 1
    ? addressDecoder.decode(data.subarray(at + 4, at + 36))
    : null;
}

export function decodeMint(data: Uint8Array) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return {
    mintAuthority: optionalAddress(data, 0),
    supply: view.getBigUint64(36, true),
    decimals: data[44] ?? 0,
    isInitialized: data[45] === 1,
    freezeAuthority: optionalAddress(data, 46),
  };
}

const STATES = ["uninitialized", "initialized", "frozen"] as const;

function decodeTokenAccount(data: Uint8Array) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const isNative = view.getUint32(109, true) === 1;
  return {
    mint: addressDecoder.decode(data.subarray(0, 32)),
    owner: addressDecoder.decode(data.subarray(32, 64)),
    amount: view.getBigUint64(64, true),
    delegate: optionalAddress(data, 72),
    state: STATES[data[108] ?? 0] ?? "uninitialized",
    isNative,
    rentExemptReserve: isNative ? view.getBigUint64(113, true) : null,
    delegatedAmount: view.getBigUint64(121, true),
    closeAuthority: optionalAddress(data, 129),
  };
}

export function isTokenProgram(owner: string): boolean {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

/** A token amount as RPC nodes show it (`uiAmount` a float, `uiAmountString` exact). */
function tokenAmount(amount: bigint, decimals: number) {
  const text = amount.toString().padStart(decimals + 1, "0");
  const whole = text.slice(0, text.length - decimals);
  const fraction = text.slice(text.length - decimals).replace(/0+$/, "");
  const uiAmountString = fraction ? `${whole}.${fraction}` : whole;
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

/**
 * The `jsonParsed` form of a token program account, or undefined when the data is no mint or
 * token account (nodes then fall back to base64).
 */
export function parseTokenAccountData(
  owner: string,
  data: Uint8Array,
  mintDecimals: (mint: Address) => number | undefined,
) {
  if (!isTokenProgram(owner)) return undefined;
  const program = owner === TOKEN_PROGRAM ? "spl-token" : "spl-token-2022";
  const isAccount =
    data.length === TOKEN_ACCOUNT_SIZE || (owner === TOKEN_2022_PROGRAM && data[165] === 2);
  const isMint = data.length === MINT_SIZE || (owner === TOKEN_2022_PROGRAM && data[165] === 1);
  if (isAccount) {
    const account = decodeTokenAccount(data);
    const decimals = mintDecimals(account.mint);
    if (decimals === undefined) return undefined;
    const info: Record<string, unknown> = {
      isNative: account.isNative,
      mint: account.mint,
      owner: account.owner,
      state: account.state,
      tokenAmount: tokenAmount(account.amount, decimals),
    };
    if (account.delegate) {
      info.delegate = account.delegate;
      info.delegatedAmount = tokenAmount(account.delegatedAmount, decimals);
    }
    if (account.closeAuthority) info.closeAuthority = account.closeAuthority;
    if (account.rentExemptReserve !== null)
      info.rentExemptReserve = tokenAmount(account.rentExemptReserve, 9);
    return { program, parsed: { info, type: "account" }, space: data.length };
  }
  if (isMint) {
    const mint = decodeMint(data);
    const info = {
      decimals: mint.decimals,
      freezeAuthority: mint.freezeAuthority,
      isInitialized: mint.isInitialized,
      mintAuthority: mint.mintAuthority,
      supply: mint.supply.toString(),
    };
    return { program, parsed: { info, type: "mint" }, space: data.length };
  }
  return undefined;
}
