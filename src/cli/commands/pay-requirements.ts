/**
 * `facilitator pay --requirements FILE`: PaymentRequirements of x402 v1 or v2, a list of them, or
 * a resource server's 402 answer (`{x402Version, accepts: [...]}`); the first `exact` one on an
 * EVM network is paid.
 */
import { chainIdOfCaip2, chainIdOfV1Name } from "../../chain/networks.js";
import type { RequirementsJson } from "../../client/sign-payment.js";
import type { Failure } from "../../errors.js";
import { UsageError } from "../errors.js";

export interface PickedRequirements {
  readonly requirements: RequirementsJson;
  readonly x402Version: 1 | 2;
  readonly amount: bigint;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function payable(value: unknown): value is RequirementsJson {
  if (!isObject(value) || value.scheme !== "exact" || typeof value.network !== "string") {
    return false;
  }
  return (
    chainIdOfCaip2(value.network) !== undefined || chainIdOfV1Name(value.network) !== undefined
  );
}

export function pickRequirements(
  parsed: { ok: true; value: unknown } | { ok: false; failure: Failure },
  source: string,
): PickedRequirements {
  if (!parsed.ok) throw new UsageError(`--requirements ${source}: ${parsed.failure.message}`);
  const value = parsed.value;
  const candidates = Array.isArray(value)
    ? value
    : isObject(value) && Array.isArray(value.accepts)
      ? value.accepts
      : [value];
  const requirements = candidates.find(payable);
  if (!requirements) {
    throw new UsageError(
      `--requirements ${source} holds no "exact" PaymentRequirements on an EVM network (eip155:<id> or a v1 name)`,
    );
  }
  const amountText = requirements.amount ?? requirements.maxAmountRequired;
  if (typeof amountText !== "string" || !/^\d+$/.test(amountText)) {
    throw new UsageError(
      `--requirements ${source}: amount (v2) or maxAmountRequired (v1) must be a whole number of atomic units`,
    );
  }
  for (const key of ["asset", "payTo"] as const) {
    if (typeof requirements[key] !== "string") {
      throw new UsageError(`--requirements ${source}: ${key} must be an address`);
    }
  }
  const x402Version = "maxAmountRequired" in requirements ? 1 : 2;
  return { requirements, x402Version, amount: BigInt(amountText) };
}
