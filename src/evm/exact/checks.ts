/** Checks every exact-EVM method makes the same way: agreement, signed terms, the asset's code. */
import type { Address, Hex } from "viem";
import { setNewest } from "../../core/newest.js";
import { nodeErrorOf } from "../../core/thrown.js";
import { type TokenUnits, tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue } from "../../protocol/schemas.js";
import { firstLine } from "../../protocol/words.js";
import type * as z from "../../protocol/zod.js";
import { isUnreachable, unreachableReason } from "../../rpc/rpc.js";
import {
  type GasNeed,
  gasBound,
  isOutOfGas,
  overGasBound,
  simulationGas,
} from "../chain/gas-bounds.js";
import type { ContractCall } from "../chain/outcome.js";
import { isRevert } from "../chain/revert.js";
import { tokenUnits } from "../chain/token-units.js";
import type { EvmContext } from "../context.js";
import { type EvmRequirements, eip712Domain, parseEvmRequirements } from "./requirements.js";

export type Step<T> = { ok: true; value: T } | { ok: false; failure: Failure };

export const refuse = (f: Failure): { ok: false; failure: Failure } => ({ ok: false, failure: f });

/** A signature refused, under the method's own x402 reason when it is invalid. */
export const signatureRefused = (f: Failure, x402Reason: string) =>
  refuse(f.code === "invalid_signature" ? { ...f, x402Reason } : f);

/** The reference refuses authorizations that expire within this many seconds. */
export const DEADLINE_HEADROOM_SECONDS = 6n;

/** A signed payment as every method reads it. */
export interface SignedPayment<A> {
  readonly authorization: A;
  readonly signature: Hex;
  readonly requirements: EvmRequirements;
  /** The token's EIP-712 domain from requirements.extra when there (checked later, in order). */
  readonly domain: { readonly name: string; readonly version: string } | undefined;
}

/** The token's EIP-712 domain as the payer signed it (blank when requirements.extra lacks it). */
export function tokenDomain(ctx: EvmContext, { domain, requirements }: SignedPayment<unknown>) {
  const { name, version } = domain ?? { name: "", version: "" };
  return { name, version, chainId: ctx.chainId, verifyingContract: requirements.asset };
}

/** A token's units for the words of a shortfall (read once per token), or none. */
export const unitsOf = (ctx: EvmContext, token: Address) =>
  tokenUnits(ctx.client, ctx.chainId, token).catch(() => undefined);

/** The payer's code, read beside the other checks (signature.ts reports its failure). */
export function readCode(ctx: EvmContext, address: Address): Promise<Hex | undefined> {
  const code = ctx.client.getCode({ address });
  code.catch(() => undefined);
  return code;
}

/** A settlement's gas need: a payer with code (or deployed now) runs its check in the transfer. */
export async function settlementGas(
  use: GasNeed["use"],
  asset: Address,
  payerCode: Promise<Hex | undefined>,
  deployment: object | undefined,
) {
  const code = await payerCode.catch(() => undefined);
  const deploys = deployment !== undefined;
  const contractWallet = deploys || (code !== undefined && code !== "0x");
  return { use, contractWallet, deployment: deploys, asset } as const;
}

/** A method's payload against its schema, and the requirement fields every method reads. */
export function parsePayment<T extends { readonly signature: Hex }, K extends keyof T>(
  request: PaymentRequest,
  schema: z.ZodMiniType<T>,
  field: K,
): Step<SignedPayment<T[K]>> {
  const payload = schema.safeParse(request.payload);
  if (!payload.success) {
    const prefix = `${request.paths.payload}.payload`;
    return refuse(invalidField(describeIssue(payload.error, prefix), prefix));
  }
  const requirements = parseEvmRequirements(request);
  if (!requirements.ok) return requirements;
  const domain = eip712Domain(request);
  return {
    ok: true,
    value: {
      authorization: payload.data[field],
      signature: payload.data.signature,
      requirements: requirements.value,
      domain: domain.ok ? domain.value : undefined,
    },
  };
}

type Read<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Never rejects: lets a check start early and be read later, or not at all. */
export function outcomeOf<T>(promise: Promise<T>): Promise<Read<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** Runs `call` with the most gas its settlement may get: a token needing more fails at verify. */
export function simulateWithin(
  ctx: EvmContext,
  call: ContractCall & { readonly account?: Address },
  need: Pick<GasNeed, "use" | "deployment">,
) {
  const gas = simulationGas(ctx.gasBounds, need.use, need.deployment);
  return outcomeOf(ctx.client.call({ ...call, gas }));
}

/** Why a failed simulation refuses (null if it didn't): RPC unreachable, out of gas (over the
 * bound, one unbounded estimate), else the method's diagnosis. */
export async function simulationFailure(
  ctx: EvmContext,
  simulated: Read<unknown> | undefined,
  call: ContractCall & { readonly account?: Address },
  need: GasNeed,
  doing: string,
  diagnose: (error: unknown) => Failure | Promise<Failure>,
): Promise<Failure | null> {
  if (!simulated || simulated.ok) return null;
  const { error } = simulated;
  if (isUnreachable(error)) return chainFailure(error, doing);
  if (isOutOfGas(error)) {
    const given = simulationGas(ctx.gasBounds, need.use, need.deployment);
    const asked = await ctx.client.estimateGas(call).catch(() => given + 1n);
    const overBound = overGasBound(ctx.chainId, need, gasBound(ctx.gasBounds, need), asked);
    if (overBound) return overBound;
  }
  return diagnose(error);
}

export function chainFailure(error: unknown, doing: string): Failure {
  if (isUnreachable(error)) {
    const why = `${doing}: the RPC could not be reached (${unreachableReason(error)})`;
    return failure("chain_unavailable", why);
  }
  // The node's error that is no revert (a revert is the call's answer): the chain failed us.
  const said = isRevert(error) ? undefined : nodeErrorOf(error);
  if (said !== undefined) {
    return failure("chain_unavailable", `${doing}: the RPC answered with an error (${said})`);
  }
  return failure("internal_error", `${doing}: ${firstLine(error)}`);
}

/** Chain reads in one round trip, each as outcomeOf answers it, led by the failure of the first
 * that could not reach the RPC. */
export async function readTogether<T extends readonly unknown[] | []>(
  doing: string,
  reads: T,
): Promise<[Failure | null, ...{ -readonly [K in keyof T]: Read<Awaited<T[K]>> }]> {
  const outcomes = await Promise.all(reads.map((read) => outcomeOf(Promise.resolve(read))));
  const unreachable = outcomes.find((r) => !r.ok && isUnreachable(r.error));
  const failed = unreachable && !unreachable.ok ? chainFailure(unreachable.error, doing) : null;
  return [failed, ...outcomes] as never;
}

/** The payer holds less than the payment needs (`units` for the words, when read). */
export function insufficientFunds(
  held: bigint,
  needed: bigint,
  units: TokenUnits | undefined,
  x402Reason?: string,
): Failure {
  return failure(
    "insufficient_funds",
    `the payer holds ${tokenAmount(held, units)}, the payment needs ${tokenAmount(needed, units)}`,
    { x402Reason },
  );
}

/** The payload's network against the requirements': the same words for every EVM method. */
function networkMismatch(request: PaymentRequest, x402Reason?: string): Failure | null {
  if (request.payloadNetwork === request.requirements.network) return null;
  return failure(
    "network_mismatch",
    `the payload's network "${request.payloadNetwork}" differs from the requirements' "${request.requirements.network}"`,
    { x402Reason },
  );
}

/** A Permit2 method's scheme (its own, not the requirements') and network, in the reference's order. */
export function schemeAndNetwork(
  request: PaymentRequest,
  scheme: string,
  reasons: { readonly scheme: string; readonly network?: string },
): Failure | null {
  if (request.payloadScheme !== scheme) {
    return failure(
      "scheme_mismatch",
      `the payload's scheme "${request.payloadScheme}" is not "${scheme}"`,
      { x402Reason: reasons.scheme },
    );
  }
  return networkMismatch(request, reasons.network);
}

/** Scheme, EIP-712 domain (parsePayment read it) and network, in the reference's order. */
export function disagreement(request: PaymentRequest): Failure | null {
  const { payloadScheme, requirements } = request;
  if (payloadScheme !== requirements.scheme) {
    const why = `the payload's scheme "${payloadScheme}" differs from the requirements' "${requirements.scheme}"`;
    return failure("scheme_mismatch", why);
  }
  const domain = eip712Domain(request);
  return domain.ok ? networkMismatch(request) : domain.failure;
}

/** Verifies only: a restarted chain may lack the code, and a transfer to no code "succeeds"
 * moving nothing, wasting our gas. */
const contractAssets = new Map<string, number>();
const ASSET_CACHE_MS = 15 * 60_000;
const ASSET_CACHE_MAX = 4096;

async function assetIsContract(
  ctx: EvmContext,
  asset: Address,
  settling = false,
): Promise<boolean> {
  const key = `${ctx.chainId}:${asset}`;
  const cachedAt = contractAssets.get(key);
  if (!settling && cachedAt !== undefined && Date.now() - cachedAt < ASSET_CACHE_MS) return true;
  const isContract = await hasCode(ctx, asset);
  if (isContract) setNewest(contractAssets, key, Date.now(), ASSET_CACHE_MAX);
  return isContract;
}

/** Creation code returning EXTCODESIZE(address) as one word (PUSH1 0, not PUSH0: pre-Shanghai). */
const codeSizeCall = (address: Address) => `0x73${address.slice(2)}3b60005260206000f3` as const;
const WORD = /^0x[0-9a-fA-F]{64}$/;
/** Chains whose node would not run codeSizeCall (no creation calls, another VM): eth_getCode. */
const noCodeSizeCall = new Set<number>();

/** Whether `address` has code, by its size (one word, not the bytecode each settle); eth_getCode
 * for a node that can't answer that. */
async function hasCode(ctx: EvmContext, address: Address): Promise<boolean> {
  if (!noCodeSizeCall.has(ctx.chainId)) {
    try {
      const word: unknown = await ctx.client.request({
        method: "eth_call",
        params: [{ data: codeSizeCall(address) }, "latest"],
      });
      if (typeof word === "string" && WORD.test(word)) return BigInt(word) > 0n;
    } catch (error) {
      // Unreachable or rate-limited says nothing of the node: the settle fails as it did.
      if (isUnreachable(error)) throw error;
    }
    noCodeSizeCall.add(ctx.chainId);
  }
  const code = await ctx.client.getCode({ address });
  return code !== undefined && code !== "0x";
}

/** asset_not_contract, or a chain failure: started beside the other checks, never rejects. */
export function assetFailure(
  ctx: EvmContext,
  asset: Address,
  settling: boolean | undefined,
): Promise<Failure | null> {
  return assetIsContract(ctx, asset, settling).then(
    (isContract) =>
      isContract
        ? null
        : failure("asset_not_contract", `no contract at ${asset} on chain ${ctx.chainId}`),
    (error: unknown) => chainFailure(error, "reading the asset's code"),
  );
}
