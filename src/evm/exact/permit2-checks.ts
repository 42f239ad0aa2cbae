/**
 * What the Permit2 method checks without the payer's help: the signed terms against the
 * requirements, in the reference's order, and why the proxy call would revert (or did).
 */
import { type Address, type Hex, isAddressEqual, size } from "viem";
import { isUnreachable } from "../../core/rpc.js";
import type { ExpectedTransfer, JournalEntry } from "../../core/store.js";
import { tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { tooEarly, tooLate } from "../../protocol/words.js";
import type * as z from "../../protocol/zod.js";
import { tokenUnits } from "../chain/token-units.js";
import type { EvmContext } from "../context.js";
import { chainFailure, outcomeOf, parsePayment, type Step } from "./checks.js";
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

/** The reference refuses authorizations whose deadline is within this many seconds. */
const DEADLINE_HEADROOM_SECONDS = 6n;

/** The checks that need no chain, in the reference's order: spender, recipient, time, amount, token. */
export function checkTerms(ctx: EvmContext, payment: Permit2Payment): Failure | null {
  const { authorization: auth, requirements } = payment;
  const now = BigInt(Math.floor(ctx.now()));
  if (!isAddressEqual(auth.spender, EXACT_PERMIT2_PROXY_ADDRESS)) {
    return failure(
      "spender_mismatch",
      `the Permit2 spender is ${auth.spender}; it must be the x402 exact Permit2 proxy ${EXACT_PERMIT2_PROXY_ADDRESS}`,
    );
  }
  if (!isAddressEqual(auth.witness.to, requirements.payTo)) {
    return failure(
      "recipient_mismatch",
      `the witness pays ${auth.witness.to}, requirements.payTo is ${requirements.payTo}`,
      { x402Reason: "invalid_permit2_recipient_mismatch" },
    );
  }
  if (auth.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    return failure(
      "authorization_expired",
      tooLate(
        "the Permit2 authorization",
        "payload.permit2Authorization.deadline",
        auth.deadline,
        now,
        DEADLINE_HEADROOM_SECONDS,
      ),
      { x402Reason: "permit2_deadline_expired" },
    );
  }
  if (auth.witness.validAfter > now) {
    return failure(
      "authorization_not_yet_valid",
      tooEarly(
        "the Permit2 authorization",
        "payload.permit2Authorization.witness.validAfter",
        auth.witness.validAfter,
        now,
      ),
      { x402Reason: "permit2_not_yet_valid" },
    );
  }
  if (auth.permitted.amount !== requirements.amount) {
    return failure(
      "amount_mismatch",
      `the Permit2 authorization is for ${auth.permitted.amount}, the requirements ask for exactly ${requirements.amount}`,
      { x402Reason: "permit2_amount_mismatch" },
    );
  }
  if (!isAddressEqual(auth.permitted.token, requirements.asset)) {
    return failure(
      "asset_mismatch",
      `the Permit2 authorization moves ${auth.permitted.token}, requirements.asset is ${requirements.asset}`,
    );
  }
  return null;
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
  expect: ExpectedTransfer,
  asked: boolean,
  signed: { readonly owner: Address; readonly digest: Hex; readonly signature: Hex },
): Promise<Failure | null> {
  const journaled = entry.expect;
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
