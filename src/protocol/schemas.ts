/** zod schemas for the x402 wire types every scheme shares; schemes check their own fields. */
import * as z from "./zod.js";

const nonEmpty = z.string().check(z.minLength(1, "must be a non-empty string"));
const extra = z.nullish(z.record(z.string(), z.unknown()));

export const requirementsV2Schema = z.looseObject({
  scheme: nonEmpty,
  network: nonEmpty,
  amount: z.string(),
  asset: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.optional(z.number().check(z.nonnegative())),
  extra,
});

export const requirementsV1Schema = z.looseObject({
  scheme: nonEmpty,
  network: nonEmpty,
  maxAmountRequired: z.string(),
  asset: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.optional(z.number().check(z.positive())),
  resource: z.optional(z.string()),
  description: z.optional(z.string()),
  extra,
});

export const payloadV2Schema = z.looseObject({
  x402Version: z.literal(2),
  accepted: z.looseObject({ scheme: nonEmpty, network: nonEmpty }),
  payload: z.record(z.string(), z.unknown()),
  resource: z.optional(z.unknown()),
  extensions: z.nullish(z.record(z.string(), z.unknown())),
});

export const payloadV1Schema = z.looseObject({
  x402Version: z.literal(1),
  scheme: nonEmpty,
  network: nonEmpty,
  payload: z.record(z.string(), z.unknown()),
});

export const WAIT_UNTIL = ["simulated", "submitted", "confirmed"] as const;
export type WaitUntil = (typeof WAIT_UNTIL)[number];

/** "payload.payload.authorization.value: expected …" from the first zod issue. */
export function describeIssue(error: z.core.$ZodError, prefix: string): string {
  const issue = error.issues[0];
  if (!issue) return `${prefix}: invalid`;
  const path = [prefix, ...issue.path.map(String)].join(".");
  // zod's own words ("Invalid input: expected string, received undefined") in a person's.
  if (issue.code === "invalid_type") {
    const expected = String((issue as { expected?: unknown }).expected ?? "value");
    const what = /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
    return /received undefined/.test(issue.message)
      ? `${path} is missing (${what} is expected)`
      : `${path}: must be ${what}, ${issue.message.replace(/^.*received /, "not ")}`;
  }
  return `${path}: ${issue.message}`;
}
