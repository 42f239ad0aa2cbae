/** The batch-settlement payloads as zod schemas: strict about what we read, lenient otherwise. */
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue } from "../../protocol/schemas.js";
import * as z from "../../protocol/zod.js";
import type { Step } from "../exact/checks.js";
import { address, bytes32, signatureBytes, uint256 } from "../exact/fields.js";
import { permit2Payload } from "../exact/permit2.js";
import { rejected } from "./reasons.js";

const MAX_UINT128 = 2n ** 128n - 1n;
const uint128 = uint256.check(
  z.refine((value: bigint) => value <= MAX_UINT128, "does not fit in uint128"),
);

export const channelConfigSchema = z.object({
  payer: address,
  payerAuthorizer: address,
  receiver: address,
  receiverAuthorizer: address,
  token: address,
  withdrawDelay: z.number().check(z.int(), z.gte(0), z.lte(2 ** 40 - 1)),
  salt: bytes32,
});
export type ChannelConfig = z.infer<typeof channelConfigSchema>;

const voucherFields = z.object({
  channelId: z.string(),
  maxClaimableAmount: uint128,
  signature: signatureBytes,
});
export type VoucherFields = z.infer<typeof voucherFields>;

const erc3009Authorization = z.object({
  validAfter: uint256,
  validBefore: uint256,
  salt: bytes32,
  signature: signatureBytes,
});

/** The exact scheme's Permit2 authorization, its witness the channel, with its signature in it. */
const permit2Authorization = z.extend(
  permit2Payload({ channelId: z.string() }).shape.permit2Authorization,
  { signature: signatureBytes },
);

export const depositSchema = z.object({
  type: z.literal("deposit"),
  channelConfig: channelConfigSchema,
  voucher: voucherFields,
  deposit: z.object({
    amount: uint128,
    authorization: z.object({
      erc3009Authorization: z.optional(erc3009Authorization),
      permit2Authorization: z.optional(permit2Authorization),
    }),
  }),
});
export type DepositPayload = z.infer<typeof depositSchema>;

/** What every payload about one channel carries. */
export type ChannelPayload = Pick<DepositPayload, "channelConfig" | "voucher">;

export const voucherSchema = z.object({
  type: z.enum(["voucher", "refund"]),
  channelConfig: channelConfigSchema,
  voucher: voucherFields,
});

const voucherClaimSchema = z.object({
  voucher: z.object({ channel: channelConfigSchema, maxClaimableAmount: uint128 }),
  signature: signatureBytes,
  totalClaimed: uint128,
});
export type VoucherClaim = z.infer<typeof voucherClaimSchema>;

export const claimSchema = z.object({
  type: z.literal("claim"),
  claims: z.array(voucherClaimSchema).check(z.minLength(1), z.maxLength(1000)),
  claimAuthorizerSignature: z.optional(signatureBytes),
});

export const sweepSchema = z.object({
  type: z.literal("settle"),
  receiver: address,
  token: address,
});

export const refundSchema = z.object({
  type: z.literal("refund"),
  channelConfig: channelConfigSchema,
  voucher: voucherFields,
  amount: uint128,
  refundNonce: uint256,
  claims: z.array(voucherClaimSchema).check(z.maxLength(1000)),
  refundAuthorizerSignature: z.optional(signatureBytes),
  claimAuthorizerSignature: z.optional(signatureBytes),
});
export type RefundPayload = z.infer<typeof refundSchema>;

type Payload = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is Payload => typeof value === "object" && value !== null;
const hasFields = (node: unknown, ...keys: string[]) =>
  isObject(node) && keys.every((key) => key in node);
const hasChannel = (payload: Payload) =>
  "channelConfig" in payload &&
  hasFields(payload.voucher, "channelId", "maxClaimableAmount", "signature");
const VOUCHER = {
  needs: "channelConfig and voucher {channelId, maxClaimableAmount, signature}",
  has: hasChannel,
};

/** Each type's name and the fields the official facilitator dispatches it on (else payload_type). */
const SHAPES = {
  deposit: {
    noun: "deposit",
    needs:
      "channelConfig, voucher {channelId, maxClaimableAmount, signature} and deposit {amount, authorization}",
    has: ({ deposit, ...payload }: Payload) =>
      hasChannel(payload) &&
      isObject(deposit) &&
      typeof deposit.amount === "string" &&
      isObject(deposit.authorization),
  },
  voucher: { noun: "voucher", ...VOUCHER },
  refund: { noun: "refund", ...VOUCHER },
  "settle-refund": {
    noun: "refund to settle",
    needs: "channelConfig, voucher, amount, refundNonce and claims",
    has: (payload: Payload) =>
      hasChannel(payload) && hasFields(payload, "amount", "refundNonce", "claims"),
  },
  settle: {
    noun: "settle",
    needs: "receiver and token",
    has: (payload: Payload) => hasFields(payload, "receiver", "token"),
  },
} as const;

/** The payload against `schema`, refused `payload_type` first if it lacks the shape of `type`. */
export function parsePayload<T>(
  request: Pick<PaymentRequest, "payload" | "paths">,
  schema: z.ZodMiniType<T>,
  type?: keyof typeof SHAPES,
): Step<T> {
  if (type && !SHAPES[type].has(request.payload)) {
    const { noun, needs } = SHAPES[type];
    const message = `${request.paths.payload}.payload is no ${noun}: it needs ${needs}`;
    return { ok: false, failure: rejected("payload_type", message) };
  }
  const parsed = schema.safeParse(request.payload);
  if (parsed.success) return { ok: true, value: parsed.data };
  const prefix = `${request.paths.payload}.payload`;
  return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
}
