/** What a Permit2 payment checks without the payer's help, in the reference's order, and why the
 * proxy call would revert. */
import { type Abi, type Address, getContract, type Hex, isAddressEqual } from "viem";
import { tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { tooEarly, tooLate } from "../../protocol/words.js";
import type * as z from "../../protocol/zod.js";
import type { EvmContext } from "../context.js";
import {
  DEADLINE_HEADROOM_SECONDS,
  insufficientFunds,
  readTogether,
  type SignedPayment,
  unitsOf,
} from "./checks.js";
import {
  type Eip2612Permit,
  PERMIT2_ADDRESS,
  type Permit2Authorization,
  permit2ReadsAbi,
} from "./permit2-encoding.js";

/** With the payer's EIP-2612 permit for Permit2, when the payment carries one. */
export type Permit2Payment<A extends Permit2Authorization = Permit2Authorization> = Omit<
  SignedPayment<A>,
  "domain"
> & { readonly permit2612?: Eip2612Permit | undefined };

/** Where exact and upto differ; the checks, and their order, are one. */
export interface Permit2Scheme<A extends Permit2Authorization> {
  readonly scheme: "exact" | "upto";
  /** The x402 reasons of a scheme and a network mismatch. */
  readonly reasons: { readonly scheme: string; readonly network?: string };
  readonly proxy: Address;
  readonly abi: Abi;
  /** The gas use (also the method's and the gas estimate's name), and with an EIP-2612 permit. */
  readonly use: "permit2" | "upto";
  readonly use2612: "permit2Eip2612" | "uptoEip2612";
  /** How the time messages, the asset message and a failed simulation name it. */
  readonly subject: string;
  readonly assetSubject: string;
  readonly settlement: string;
  readonly schema: z.ZodMiniType<{ readonly permit2Authorization: A; readonly signature: Hex }>;
  digest(chainId: number, authorization: A): Hex;
  calldata(authorization: A, amount: bigint, signature: Hex, permit2612?: Eip2612Permit): Hex;
  /** A check after the recipient's and before the time (upto's facilitator). */
  witness?(ctx: EvmContext, authorization: A): Failure | null;
  /** The amount signed for against the one asked for (`settling`: by settle). */
  amount(signed: bigint, asked: bigint, settling: boolean): Failure | null;
  /** upto: the witness's facilitator, the one account the proxy lets settle (deployed wallets
   * only; zero is not simulated). */
  settler?(authorization: A): Address;
  /** A proxy error the scheme words itself. */
  named?(error: string | undefined): Failure | undefined;
  /** Whether a journaled payment of this nonce may be this one: it asked for what was signed. */
  asked(payment: Permit2Payment<A>): boolean;
  readonly revertedReason?: string;
}

/** The checks that need no chain, in the reference's order: spender, recipient, time, amount, token. */
export function checkPermit2Terms<A extends Permit2Authorization>(
  ctx: EvmContext,
  { authorization: auth, requirements }: Permit2Payment<A>,
  rules: Permit2Scheme<A>,
  settling: boolean,
): Failure | null {
  const now = BigInt(Math.floor(ctx.now()));
  const field = "payload.permit2Authorization";
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
  const witness = rules.witness?.(ctx, auth) ?? null;
  if (witness) return witness;
  if (auth.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    const at = `${field}.deadline`;
    const why = tooLate(rules.subject, at, auth.deadline, now, DEADLINE_HEADROOM_SECONDS);
    return failure("authorization_expired", why, { x402Reason: "permit2_deadline_expired" });
  }
  const { validAfter } = auth.witness;
  if (validAfter > now) {
    const why = tooEarly(rules.subject, `${field}.witness.validAfter`, validAfter, now);
    return failure("authorization_not_yet_valid", why, { x402Reason: "permit2_not_yet_valid" });
  }
  const amount = rules.amount(auth.permitted.amount, requirements.amount, settling);
  if (amount) return amount;
  if (!isAddressEqual(auth.permitted.token, requirements.asset)) {
    return failure(
      "asset_mismatch",
      `${rules.assetSubject} moves ${auth.permitted.token}, requirements.asset is ${requirements.asset}`,
    );
  }
  return null;
}

const readsOf = (ctx: EvmContext, address: Address) =>
  getContract({ address, abi: permit2ReadsAbi, client: ctx.client }).read;

/** What can be checked before the payer's approval lands: the proxy answers, the payer holds `amount`. */
export async function prerequisiteFailure(
  ctx: EvmContext,
  payer: Address,
  token: Address,
  amount: bigint,
  proxy: Address,
): Promise<Failure | null> {
  const [unreachable, deployed, balance] = await readTogether("reading the chain", [
    readsOf(ctx, proxy).PERMIT2(),
    readsOf(ctx, token).balanceOf([payer]),
  ]);
  if (unreachable) return unreachable;
  if (!deployed.ok) {
    return failure(
      "proxy_not_deployed",
      `the x402 Permit2 proxy ${proxy} does not answer on chain ${ctx.chainId}`,
    );
  }
  if (balance.ok && balance.value < amount) {
    const reason = "permit2_insufficient_balance";
    return insufficientFunds(balance.value, amount, await unitsOf(ctx, token), reason);
  }
  return null;
}

/** Why the proxy call would revert, in the reference's order (proxy, balance, allowance), then a
 * used nonce (under `permit2_simulation_failed`). */
export async function diagnose(
  ctx: EvmContext,
  payment: Permit2Payment,
  revert: string | undefined,
  proxy: Address,
): Promise<Failure> {
  const { from, nonce, permitted } = payment.authorization;
  const { token, amount } = permitted;
  const [first, [unreachable, allowance, bitmap]] = await Promise.all([
    prerequisiteFailure(ctx, from, token, amount, proxy),
    readTogether("diagnosing the failed simulation", [
      readsOf(ctx, token).allowance([from, PERMIT2_ADDRESS]),
      readsOf(ctx, PERMIT2_ADDRESS).nonceBitmap([from, nonce >> 8n]),
    ]),
  ]);
  const stop = first ?? unreachable;
  if (stop) return stop;
  if (allowance.ok && allowance.value < amount) {
    const words = await unitsOf(ctx, token);
    return failure(
      "allowance_required",
      `the payer allows Permit2 (${PERMIT2_ADDRESS}) ${tokenAmount(allowance.value, words)} of this token and the payment needs ${tokenAmount(amount, words)}: the payer must approve Permit2, or send an eip2612GasSponsoring permit`,
    );
  }
  if (bitmap.ok && ((bitmap.value >> (nonce & 0xffn)) & 1n) === 1n) {
    return failure(
      "nonce_already_used",
      `Permit2 nonce ${nonce} of ${from} was already used or invalidated`,
      { x402Reason: "permit2_simulation_failed" },
    );
  }
  const why = `the Permit2 settlement would revert${revert ? `: ${revert}` : ""}`;
  return failure("simulation_failed", why, { x402Reason: "permit2_simulation_failed" });
}
