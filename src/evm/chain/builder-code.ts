/** ERC-8021 builder codes: a Schema 2 calldata suffix (CBOR `a` app, `w` ours, `s` services).
 * None without our code (its calldata is our gas); bounded at SUFFIX_BYTES_LIMIT. */
import { concatHex, type Hex, size, toHex } from "viem";
import { field, isObject } from "../../protocol/words.js";

/** A builder code: 1 to 32 of a-z, 0-9 and "_". */
export const BUILDER_CODE_PATTERN = /^[a-z0-9_]{1,32}$/;
const MARKER = "80218021802180218021802180218021";
const SCHEMA_2 = 2;
/** A payment's codes we carry at most (app, then service codes); the first that does not fit ends them. */
export const CALLER_CODES = 4;
export const CALLER_CODE_CHARACTERS = 64;
/** The longest suffix we send: the caller's codes (75 bytes), ours (70), the framing (20). */
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

/** Our code, a v2 payment's valid app and service codes (bounded), then our service code. */
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
  const info = field(extensions?.["builder-code"], "info");
  return isObject(info) ? info : undefined;
}

/** The Schema 2 suffix of `data` (keys a, w, s as the official encoder orders them). */
export function encodeBuilderCode(data: BuilderCodeData): Hex {
  const pairs: Uint8Array[][] = [];
  if (data.a) pairs.push([text("a"), text(data.a)]);
  if (data.w) pairs.push([text("w"), text(data.w)]);
  if (data.s && data.s.length > 0) {
    pairs.push([text("s"), head(4, data.s.length), ...data.s.map(text)]);
  }
  const map = concatHex([toHex(head(5, pairs.length)), ...pairs.flat().map((e) => toHex(e))]);
  const length = size(map);
  return concatHex([map, toHex(length, { size: 2 }), toHex(SCHEMA_2, { size: 1 }), `0x${MARKER}`]);
}

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
