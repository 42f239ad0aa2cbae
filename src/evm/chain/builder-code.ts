/**
 * ERC-8021 builder codes (the x402 `builder-code` extension): a suffix appended to a transaction's
 * calldata that credits who built what. Schema 2: a CBOR map with `a` (the app, as a v2 payment
 * declares it), `w` (the wallet or facilitator: ours) and `s` (service codes: the client's and the
 * server's, then ours), its length (2 bytes), the schema id (1 byte) and the 16-byte marker. Our
 * own encoder; the official `parseBuilderCodeSuffixFromCalldata` reads what it writes (the tests
 * hold it to that, and to the suffix the official facilitator sends for the same payment).
 *
 * The suffix is ours to add: none without a code of ours configured, whatever a payment declares
 * (its calldata is our gas), and with one, a payment's codes are bounded (CALLER_CODES,
 * CALLER_CODE_CHARACTERS), so the whole suffix is at most SUFFIX_BYTES_LIMIT bytes; its gas is
 * counted inside the transaction's gas bound (chain/transactions.ts), never added to it.
 */
import { concatHex, type Hex, size, toHex } from "viem";

/** A builder code: 1 to 32 of a-z, 0-9 and "_". */
export const BUILDER_CODE_PATTERN = /^[a-z0-9_]{1,32}$/;
const MARKER = "80218021802180218021802180218021";
const SCHEMA_2 = 2;
/**
 * A payment's codes we carry, at most: its app code and its service codes, in that order, four
 * in all and 64 characters in all; the first that does not fit ends them (the official
 * extension echoes up to ten service codes of 32 characters, 363 bytes of our calldata).
 */
export const CALLER_CODES = 4;
export const CALLER_CODE_CHARACTERS = 64;
/**
 * The longest suffix we send: the caller's codes (64 characters, their CBOR heads, the `a` and
 * `s` keys and the array's head: 75 bytes at most), ours (`w` and a service code, 32 characters
 * each, with key and heads: 70), the map's head, the length, the schema id and the marker (20).
 */
export const SUFFIX_BYTES_LIMIT = 165;

/** What this facilitator signs its transactions with: its own code, and its service code. */
export interface BuilderCode {
  readonly code: string;
  readonly serviceCode?: string | undefined;
}

export interface BuilderCodeData {
  readonly w?: string | undefined;
  readonly a?: string | undefined;
  readonly s?: readonly string[] | undefined;
}

/**
 * The suffix for a transaction settling a payment of `x402Version` with `extensions`: our code,
 * the app code a v2 payment declares and the service codes it carries (valid ones, within
 * CALLER_CODES and CALLER_CODE_CHARACTERS), then our service code. Undefined without a code of
 * ours: a payment alone never adds bytes to our transaction.
 */
export function builderCodeSuffix(
  ours: BuilderCode | undefined,
  payment?: {
    readonly x402Version: number;
    readonly extensions?: Readonly<Record<string, unknown>> | undefined;
  },
): Hex | undefined {
  if (!ours?.code) return undefined;
  const info = declared(payment?.extensions);
  const raw = info?.s;
  const { app, service: echoed } = bounded(
    payment?.x402Version === 2 && valid(info?.a) ? (info?.a as string) : undefined,
    (typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw : []).filter(valid) as string[],
  );
  const service =
    ours.serviceCode && !echoed.includes(ours.serviceCode) ? [...echoed, ours.serviceCode] : echoed;
  return encodeBuilderCode({ w: ours.code, a: app, s: service });
}

/** The app code and the service codes, in that order, while they fit the caller's bounds. */
function bounded(app: string | undefined, service: readonly string[]) {
  let count = 0;
  let characters = 0;
  let full = false;
  const fits = (code: string) => {
    full ||= count + 1 > CALLER_CODES || characters + code.length > CALLER_CODE_CHARACTERS;
    if (full) return false;
    count += 1;
    characters += code.length;
    return true;
  };
  const kept = app !== undefined && fits(app) ? app : undefined;
  return { app: kept, service: service.filter(fits) };
}

/** `call`, credited: with the builder-code suffix for `payment` (or ours alone), if any. */
export function credited<C extends { readonly suffix?: Hex | undefined }>(
  ours: BuilderCode | undefined,
  call: C,
  payment?: Parameters<typeof builderCodeSuffix>[1],
): C {
  const suffix = builderCodeSuffix(ours, payment);
  return suffix ? { ...call, suffix } : call;
}

const valid = (code: unknown): boolean =>
  typeof code === "string" && BUILDER_CODE_PATTERN.test(code);

function declared(extensions: Readonly<Record<string, unknown>> | undefined) {
  const extension = extensions?.["builder-code"];
  if (typeof extension !== "object" || extension === null) return undefined;
  const info = (extension as { info?: unknown }).info;
  return typeof info === "object" && info !== null && !Array.isArray(info)
    ? (info as Record<string, unknown>)
    : undefined;
}

/** The Schema 2 suffix of `data` (keys in the order a, w, s, as the official encoder writes them; empty ones left out). */
export function encodeBuilderCode(data: BuilderCodeData): Hex {
  const entries: Uint8Array[] = [];
  if (data.a) entries.push(text("a"), text(data.a));
  if (data.w) entries.push(text("w"), text(data.w));
  if (data.s && data.s.length > 0) {
    entries.push(text("s"), head(4, data.s.length), ...data.s.map(text));
  }
  const map = concatHex([toHex(head(5, countKeys(data))), ...entries.map((e) => toHex(e))]);
  const length = size(map);
  return concatHex([map, toHex(length, { size: 2 }), toHex(SCHEMA_2, { size: 1 }), `0x${MARKER}`]);
}

const countKeys = (data: BuilderCodeData) =>
  (data.w ? 1 : 0) + (data.a ? 1 : 0) + (data.s && data.s.length > 0 ? 1 : 0);

/** A CBOR text string. */
function text(value: string): Uint8Array {
  const bytes = new TextEncoder().encode(value);
  return new Uint8Array([...head(3, bytes.length), ...bytes]);
}

/** A CBOR head of major type `major` with argument `value` (codes are short: one or two bytes). */
function head(major: number, value: number): Uint8Array {
  const type = major << 5;
  if (value <= 23) return new Uint8Array([type | value]);
  if (value <= 0xff) return new Uint8Array([type | 24, value]);
  return new Uint8Array([type | 25, value >> 8, value & 0xff]);
}
