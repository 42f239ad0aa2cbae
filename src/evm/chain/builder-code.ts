/**
 * ERC-8021 builder codes (the x402 `builder-code` extension): a suffix appended to a transaction's
 * calldata that credits who built what. Schema 2: a CBOR map with `a` (the app, as a v2 payment
 * declares it), `w` (the wallet or facilitator: ours) and `s` (service codes: the client's and the
 * server's, then ours), its length (2 bytes), the schema id (1 byte) and the 16-byte marker. Our
 * own encoder; the official `parseBuilderCodeSuffixFromCalldata` reads what it writes (the tests
 * hold it to that, and to the suffix the official facilitator sends for the same payment).
 */
import { concatHex, type Hex, size, toHex } from "viem";

/** A builder code: 1 to 32 of a-z, 0-9 and "_". */
export const BUILDER_CODE_PATTERN = /^[a-z0-9_]{1,32}$/;
const MARKER = "80218021802180218021802180218021";
const SCHEMA_2 = 2;
/** Service codes echoed from a payment: 5 the client's and 5 the server's, at most. */
const ECHOED_SERVICE_CODES = 10;

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
 * the app code a v2 payment declares, the service codes it carries (valid ones, at most ten) and
 * ours. Undefined when there is nothing to credit.
 */
export function builderCodeSuffix(
  ours: BuilderCode | undefined,
  payment?: {
    readonly x402Version: number;
    readonly extensions?: Readonly<Record<string, unknown>> | undefined;
  },
): Hex | undefined {
  const info = declared(payment?.extensions);
  const app = payment?.x402Version === 2 && valid(info?.a) ? (info?.a as string) : undefined;
  const raw = info?.s;
  const echoed = (typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw : [])
    .filter(valid)
    .slice(0, ECHOED_SERVICE_CODES) as string[];
  const service =
    ours?.serviceCode && !echoed.includes(ours.serviceCode)
      ? [...echoed, ours.serviceCode]
      : echoed;
  if (!ours?.code && !app && service.length === 0) return undefined;
  return encodeBuilderCode({ w: ours?.code, a: app, s: service });
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
