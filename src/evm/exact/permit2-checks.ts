/**
 * What the Permit2 method checks without the payer's help: the signed terms against the
 * requirements, in the reference's order, and why the proxy call would revert (or did).
 */
import { type Address, type Hex, isAddressEqual, size } from "viem";
import type { JournalEntry } from "../../core/store.js";
import { tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { tooEarly, tooLate } from "../../protocol/words.js";
import type * as z from "../../protocol/zod.js";
import { isUnreachable } from "../../rpc/rpc.js";
import { type EvmTransfer, evmEntry } from "../chain/entry.js";
import { tokenUnits } from "../chain/token-units.js";
import type { EvmContext } from "../context.js";
import {
  chainFailure,
  DEADLINE_HEADROOM_SECONDS,
  outcomeOf,
  parsePayment,
  type Step,
} from "./checks.js";
import type { Identified } from "./method.js";
import {
  type Eip2612Permit,
  EXACT_PERMIT2_PROXY_ADDRESS,
  exactPermit2ProxyAbi,
  PERMIT2_ADDRESS,
  type Permit2Authorization,
  permit2ReadsAbi,
  permit2SettlementKey,
} from "./permit2-encoding.js";
import type { EvmRequirements } from "./requirements.js";
import { recoversTo } from "./signature.js";

export interface Permit2Payment {
  readonly authorization: Permit2Authorization;
  readonly signature: Hex;
  readonly requirements: EvmRequirements;
  /** The payer's EIP-2612 permit for Permit2, when the payment carries one. */
  readonly permit2612?: Eip2612Permit | undefined;
}

/**
 * A Permit2 payload (`permit2Authorization` and `signature`) as a payment: exact and upto read it
 * alike, each with the schema of its own witness.
 */
export function parsePermit2<A>(
  request: PaymentRequest,
  schema: z.ZodMiniType<{ permit2Authorization: A; signature: Hex }>,
): Step<{ authorization: A; signature: Hex; requirements: EvmRequirements }> {
  const parsed = parsePayment(request, schema);
  if (!parsed.ok) return parsed;
  const { payload, requirements } = parsed.value;
  return {
    ok: true,
    value: {
      authorization: payload.permit2Authorization,
      signature: payload.signature,
      requirements,
    },
  };
}

/** Permit2 spends each (owner, nonce) once, whatever the token or proxy: that names the settlement. */
export function permit2Identity(
  ctx: EvmContext,
  auth: {
    readonly from: Address;
    readonly nonce: bigint;
    readonly permitted: { readonly token: Address };
  },
  gasKey: string,
): Identified {
  return {
    key: permit2SettlementKey(ctx.chainId, auth.from, auth.nonce),
    payer: auth.from,
    asset: auth.permitted.token,
    gasKey,
  };
}

/** What a Permit2 authorization of either scheme signs, as far as the terms check reads it. */
interface SignedPermit2 {
  readonly spender: Address;
  readonly deadline: bigint;
  readonly permitted: { readonly token: Address; readonly amount: bigint };
  readonly witness: { readonly to: Address; readonly validAfter: bigint };
}

/** Where exact and upto differ in the terms check; the rest, and its order, is one. */
export interface Permit2Rules {
  readonly proxy: Address;
  /** "exact" or "upto": the proxy's name in the spender message. */
  readonly scheme: string;
  /** How the deadline and validAfter messages name the authorization. */
  readonly subject: string;
  /** How the asset message names it. */
  readonly assetSubject: string;
  /** A check after the recipient's and before the time (upto's facilitator). */
  readonly witness?: (() => Failure | null) | undefined;
  /** The amount signed for against the one asked for. */
  readonly amount: (signed: bigint, asked: bigint) => Failure | null;
}

/**
 * The checks that need no chain, in the reference's order: spender, recipient, (witness), time,
 * amount, token.
 */
export function checkPermit2Terms(
  ctx: EvmContext,
  auth: SignedPermit2,
  requirements: EvmRequirements,
  rules: Permit2Rules,
): Failure | null {
  const now = BigInt(Math.floor(ctx.now()));
  if (!isAddressEqual(auth.spender, rules.proxy)) {
    return failure(
      "spender_mismatch",
      `the Permit2 spender is ${auth.spender}; it must be the x402 ${rules.scheme} Permit2 proxy ${rules.proxy}`,
    );
  }
  if (!isAddressEqual(auth.witness.to, requirements.payTo)) {
    return failure(
      "recipient_mismatch",
      `the witness pays ${auth.witness.to}, requirements.payTo is ${requirements.payTo}`,
      { x402Reason: "invalid_permit2_recipient_mismatch" },
    );
  }
  const witness = rules.witness?.() ?? null;
  if (witness) return witness;
  if (auth.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    const field = "payload.permit2Authorization.deadline";
    return failure(
      "authorization_expired",
      tooLate(rules.subject, field, auth.deadline, now, DEADLINE_HEADROOM_SECONDS),
      { x402Reason: "permit2_deadline_expired" },
    );
  }
  if (auth.witness.validAfter > now) {
    const field = "payload.permit2Authorization.witness.validAfter";
    return failure(
      "authorization_not_yet_valid",
      tooEarly(rules.subject, field, auth.witness.validAfter, now),
      { x402Reason: "permit2_not_yet_valid" },
    );
  }
  const amount = rules.amount(auth.permitted.amount, requirements.amount);
  if (amount) return amount;
  if (!isAddressEqual(auth.permitted.token, requirements.asset)) {
    return failure(
      "asset_mismatch",
      `${rules.assetSubject} moves ${auth.permitted.token}, requirements.asset is ${requirements.asset}`,
    );
  }
  return null;
}

const EXACT_RULES: Permit2Rules = {
  proxy: EXACT_PERMIT2_PROXY_ADDRESS,
  scheme: "exact",
  subject: "the Permit2 authorization",
  assetSubject: "the Permit2 authorization",
  amount: (signed, asked) =>
    signed === asked
      ? null
      : failure(
          "amount_mismatch",
          `the Permit2 authorization is for ${signed}, the requirements ask for exactly ${asked}`,
          { x402Reason: "permit2_amount_mismatch" },
        ),
};

/** exact's terms: the amount signed is the amount asked. */
export function checkTerms(ctx: EvmContext, payment: Permit2Payment): Failure | null {
  return checkPermit2Terms(ctx, payment.authorization, payment.requirements, EXACT_RULES);
}

const read = <T>(promise: Promise<T>) => outcomeOf(promise);

/**
 * What can be checked before the payer's approval lands: the proxy answers, and the payer holds
 * the amount. Null when both hold.
 */
export async function prerequisiteFailure(
  ctx: EvmContext,
  payment: Permit2Payment,
  proxy: Address = EXACT_PERMIT2_PROXY_ADDRESS,
): Promise<Failure | null> {
  const { authorization: auth } = payment;
  const [deployed, balance] = await Promise.all([
    read(
      ctx.client.readContract({
        address: proxy,
        abi: exactPermit2ProxyAbi,
        functionName: "PERMIT2",
      }),
    ),
    read(
      ctx.client.readContract({
        address: auth.permitted.token,
        abi: permit2ReadsAbi,
        functionName: "balanceOf",
        args: [auth.from],
      }),
    ),
  ]);
  const unreachable = [deployed, balance].find((r) => !r.ok && isUnreachable(r.error));
  if (unreachable && !unreachable.ok) return chainFailure(unreachable.error, "reading the chain");
  if (!deployed.ok) {
    return failure(
      "proxy_not_deployed",
      `the x402 Permit2 proxy ${proxy} does not answer on chain ${ctx.chainId}`,
    );
  }
  const amount = auth.permitted.amount;
  if (balance.ok && balance.value < amount) {
    // A refusal only: the token's decimals are read (once per token) for its words.
    const token = await tokenUnits(ctx.client, ctx.chainId, auth.permitted.token).catch(
      () => undefined,
    );
    return failure(
      "insufficient_funds",
      `the payer holds ${tokenAmount(balance.value, token)}, the payment needs ${tokenAmount(amount, token)}`,
      {
        x402Reason: "permit2_insufficient_balance",
      },
    );
  }
  return null;
}

/**
 * Why the proxy call would revert (or did), in the reference's order: the proxy missing, the
 * balance, the allowance for Permit2; then, finer than the reference, a Permit2 nonce already
 * used (its x402 reason stays the reference's `permit2_simulation_failed`).
 */
export async function diagnose(
  ctx: EvmContext,
  payment: Permit2Payment,
  revert: string | undefined,
  proxy: Address = EXACT_PERMIT2_PROXY_ADDRESS,
): Promise<Failure> {
  const { authorization: auth } = payment;
  const [first, allowance, bitmap] = await Promise.all([
    prerequisiteFailure(ctx, payment, proxy),
    read(
      ctx.client.readContract({
        address: auth.permitted.token,
        abi: permit2ReadsAbi,
        functionName: "allowance",
        args: [auth.from, PERMIT2_ADDRESS],
      }),
    ),
    read(
      ctx.client.readContract({
        address: PERMIT2_ADDRESS,
        abi: permit2ReadsAbi,
        functionName: "nonceBitmap",
        args: [auth.from, auth.nonce >> 8n],
      }),
    ),
  ]);
  if (first) return first;
  const unreachable = [allowance, bitmap].find((r) => !r.ok && isUnreachable(r.error));
  if (unreachable && !unreachable.ok) {
    return chainFailure(unreachable.error, "diagnosing the failed simulation");
  }
  const amount = auth.permitted.amount;
  if (allowance.ok && allowance.value < amount) {
    const token = await tokenUnits(ctx.client, ctx.chainId, auth.permitted.token).catch(
      () => undefined,
    );
    return failure(
      "allowance_required",
      `the payer allows Permit2 (${PERMIT2_ADDRESS}) ${tokenAmount(allowance.value, token)} of this token and the payment needs ${tokenAmount(amount, token)}: the payer must approve Permit2, or send an eip2612GasSponsoring permit`,
    );
  }
  if (bitmap.ok && ((bitmap.value >> (auth.nonce & 0xffn)) & 1n) === 1n) {
    return failure(
      "nonce_already_used",
      `Permit2 nonce ${auth.nonce} of ${auth.from} was already used or invalidated`,
      { x402Reason: "permit2_simulation_failed" },
    );
  }
  return failure(
    "simulation_failed",
    `the Permit2 settlement would revert${revert ? `: ${revert}` : ""}`,
    {
      x402Reason: "permit2_simulation_failed",
    },
  );
}

/**
 * Null when a journaled settlement of this Permit2 nonce is this very payment (same token,
 * recipient and amount, as asked) signed by the owner; exact and upto share the nonce space.
 */
export async function sameAsJournaled(
  ctx: EvmContext,
  entry: JournalEntry,
  expect: EvmTransfer,
  asked: boolean,
  signed: { readonly owner: Address; readonly digest: Hex; readonly signature: Hex },
): Promise<Failure | null> {
  const journaled = evmEntry(entry).expect;
  const same =
    asked &&
    journaled !== undefined &&
    isAddressEqual(expect.to, journaled.to) &&
    expect.value === journaled.value &&
    isAddressEqual(expect.token, journaled.token);
  if (!same) {
    return failure(
      "nonce_already_used",
      `this Permit2 nonce is already being settled for another payment (${entry.hashes.at(-1)})`,
      { x402Reason: "permit2_invalid_nonce" },
    );
  }
  if (size(signed.signature) !== 65) return null;
  const recovered = await recoversTo(ctx, signed.owner, signed.digest, signed.signature);
  return recovered.ok ? null : recovered.failure;
}
