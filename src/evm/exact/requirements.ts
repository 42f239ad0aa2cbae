/** The requirement fields every `exact` EVM method reads, validated once. */
import { type Failure, failed } from "../../protocol/errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue } from "../../protocol/schemas.js";
import * as z from "../../protocol/zod.js";
import { address, uint256 } from "./fields.js";

const requirementsSchema = z.object({
  amount: uint256,
  asset: address,
  payTo: address,
});

export type EvmRequirements = Readonly<z.infer<typeof requirementsSchema>>;

export function parseEvmRequirements(
  request: PaymentRequest,
): { ok: true; value: EvmRequirements } | { ok: false; failure: Failure } {
  const { requirements, paths, x402Version } = request;
  const parsed = requirementsSchema.safeParse(requirements);
  if (parsed.success) return { ok: true, value: parsed.data };
  let message = describeIssue(parsed.error, paths.requirements);
  // v1 calls the amount maxAmountRequired: name the field the caller actually sent.
  if (x402Version === 1) message = message.replace(/\.amount:/, ".maxAmountRequired:");
  return { ok: false, failure: invalidField(message, paths.requirements) };
}

/** The token's EIP-712 domain name and version from requirements.extra. */
export function eip712Domain(
  request: PaymentRequest,
):
  | { ok: true; value: { readonly name: string; readonly version: string } }
  | { ok: false; failure: Failure } {
  const { name, version } = request.requirements.extra ?? {};
  const at = `${request.paths.requirements}.extra`;
  for (const [field, value] of Object.entries({ name, version })) {
    if (value === undefined || value === null || value === "") {
      const why = `${at}.${field} is required: the token's EIP-712 domain ${field}`;
      return failed("missing_eip712_domain", why);
    }
    if (typeof value !== "string") {
      const why = `${at}.${field}: expected a string`;
      return { ok: false, failure: invalidField(why, request.paths.requirements) };
    }
  }
  return { ok: true, value: { name: name as string, version: version as string } };
}
