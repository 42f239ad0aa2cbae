/** `eip2612GasSponsoring`: the payer's permit for Permit2, applied by the proxy in the settling
 * transaction; the reference's checks and reasons. */
import { getAddress, isAddressEqual, size } from "viem";
import { failed } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { tooLate } from "../../protocol/words.js";
import type { EvmContext } from "../context.js";
import { DEADLINE_HEADROOM_SECONDS, type Step } from "./checks.js";
import {
  type Eip2612Permit,
  PERMIT2_ADDRESS,
  type Permit2Authorization,
} from "./permit2-encoding.js";

export const EIP2612_GAS_SPONSORING = "eip2612GasSponsoring";

const FIELDS = ["from", "asset", "spender", "amount", "nonce", "deadline", "signature", "version"];
const ADDRESS = /^0x[a-fA-F0-9]{40}$/;
const NUMBER = /^[0-9]{1,78}$/;
const HEX = /^0x[a-fA-F0-9]+$/;
/** The form of each field of a gas-sponsoring extension's info, as the reference checks it. */
const INFO_FORMATS: Readonly<Record<string, RegExp>> = {
  from: ADDRESS,
  asset: ADDRESS,
  spender: ADDRESS,
  amount: NUMBER,
  nonce: NUMBER,
  deadline: NUMBER,
  signature: HEX,
  signedTransaction: HEX,
  version: /^[0-9]+(\.[0-9]+)*$/,
};

/** The first of `fields` (in order) whose value in `info` is not a string of its form, if any. */
export function malformedField(
  info: Record<string, unknown>,
  fields: readonly string[],
): string | undefined {
  return fields.find((field) => {
    const value = info[field];
    return typeof value !== "string" || INFO_FORMATS[field]?.test(value) !== true;
  });
}

/** An extension's info when complete (as the reference reads it); an incomplete one is none. */
export function extensionInfo(
  request: PaymentRequest,
  name: string,
  fields: readonly string[],
): Record<string, unknown> | undefined {
  const entry = request.extensions?.[name] as { info?: unknown } | undefined;
  const info = entry?.info as Record<string, unknown> | undefined;
  if (typeof info !== "object" || info === null) return undefined;
  return fields.every((field) => Boolean(info[field])) ? info : undefined;
}

/** An extension's refusal, as `invalid_extension` with the reference's reason. */
export const invalidExtension =
  (name: string) =>
  (x402Reason: string, message: string): Step<never> =>
    failed("invalid_extension", `${name}: ${message}`, { x402Reason });

const refusal = invalidExtension(EIP2612_GAS_SPONSORING);
const invalid = (reason: string, message: string) => refusal(`eip2612_${reason}`, message);

/** The payer's EIP-2612 permit for Permit2, or undefined (an incomplete one counts as none, as
 * for the reference). */
export function eip2612Sponsoring(
  request: PaymentRequest,
  /** Whose permit it must be: the payer. */
  authorization: Pick<Permit2Authorization, "from">,
  asset: string,
  ctx: EvmContext,
): Step<Eip2612Permit> | undefined {
  const info = extensionInfo(request, EIP2612_GAS_SPONSORING, FIELDS);
  if (!info) return undefined;
  const malformed = malformedField(info, FIELDS);
  if (malformed) {
    return refusal("invalid_eip2612_extension_format", `info.${malformed} is malformed`);
  }
  // Each field is a string of its form from here on.
  const text = (field: string) => info[field] as string;
  const from = getAddress(text("from"));
  if (!isAddressEqual(from, authorization.from)) {
    return invalid("from_mismatch", `info.from ${from} is not the payer ${authorization.from}`);
  }
  if (!isAddressEqual(getAddress(text("asset")), getAddress(asset))) {
    return invalid("asset_mismatch", `info.asset is not requirements.asset ${asset}`);
  }
  if (!isAddressEqual(getAddress(text("spender")), PERMIT2_ADDRESS)) {
    return invalid("spender_not_permit2", `info.spender must be Permit2 (${PERMIT2_ADDRESS})`);
  }
  const deadline = BigInt(text("deadline"));
  const now = BigInt(Math.floor(ctx.now()));
  if (deadline < now + DEADLINE_HEADROOM_SECONDS) {
    const at = "extensions.eip2612GasSponsoring.info.deadline";
    const why = tooLate("the EIP-2612 permit", at, deadline, now, DEADLINE_HEADROOM_SECONDS);
    return invalid("deadline_expired", why);
  }
  const signature = text("signature") as `0x${string}`;
  if (size(signature) !== 65) {
    return refusal("invalid_eip2612_extension_format", "info.signature must be 65 bytes");
  }
  return { ok: true, value: { value: BigInt(text("amount")), deadline, signature } };
}
