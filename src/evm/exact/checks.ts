/**
 * Checks every exact-EVM method makes the same way: scheme, domain and network agreement, the
 * signed terms against the requirements (recipient, time window, amount), the asset's code.
 */
import { type Address, isAddressEqual } from "viem";
import { setNewest } from "../../core/newest.js";
import { nodeErrorOf } from "../../core/thrown.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue } from "../../protocol/schemas.js";
import { tooEarly, tooLate } from "../../protocol/words.js";
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
import type { EvmContext } from "../context.js";
import { type EvmRequirements, eip712Domain, parseEvmRequirements } from "./requirements.js";

export type Step<T> = { ok: true; value: T } | { ok: false; failure: Failure };

/**
 * The reference refuses authorizations (EIP-3009's validBefore, a permit's or a Permit2 deadline)
 * that expire within this many seconds.
 */
export const DEADLINE_HEADROOM_SECONDS = 6n;

/**
 * A method's payload against its schema, and the requirement fields every method reads; the
 * token's EIP-712 domain from requirements.extra when it is there (checked later, in order).
 */
export function parsePayment<T>(
  request: PaymentRequest,
  schema: z.ZodMiniType<T>,
): Step<{
  readonly payload: T;
  readonly requirements: EvmRequirements;
  readonly domain: { readonly name: string; readonly version: string } | undefined;
}> {
  const payload = schema.safeParse(request.payload);
  if (!payload.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(payload.error, prefix), prefix) };
  }
  const requirements = parseEvmRequirements(request);
  if (!requirements.ok) return requirements;
  const domain = eip712Domain(request);
  return {
    ok: true,
    value: {
      payload: payload.data,
      requirements: requirements.value,
      domain: domain.ok ? { name: domain.name, version: domain.version } : undefined,
    },
  };
}

/** Never rejects: lets a check start early and be read later, or not at all. */
export function outcomeOf<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * Runs `call` against the latest block with the gas a settlement of its kind could ever get, so a
 * token that needs more fails here, at verify, not in a transaction we pay for.
 */
export function simulateWithin(
  ctx: EvmContext,
  call: ContractCall & { readonly account?: Address },
  need: Pick<GasNeed, "use" | "deployment">,
) {
  const gas = simulationGas(ctx.gasBounds, need.use, need.deployment);
  return outcomeOf(ctx.client.call({ ...call, gas }));
}

/**
 * A simulation that ran out of its gas: refused as over the bound, naming what the call would
 * take (one estimate without a limit, on this rare path). Undefined for any other failure.
 */
export async function overBoundInSimulation(
  ctx: EvmContext,
  call: ContractCall & { readonly account?: Address },
  need: GasNeed,
  error: unknown,
): Promise<Failure | undefined> {
  if (!isOutOfGas(error)) return undefined;
  const given = simulationGas(ctx.gasBounds, need.use, need.deployment);
  const asked = await ctx.client.estimateGas(call).catch(() => given + 1n);
  return overGasBound(ctx.chainId, need, gasBound(ctx.gasBounds, need), asked);
}

export function chainFailure(error: unknown, doing: string): Failure {
  if (isUnreachable(error)) {
    return failure(
      "chain_unavailable",
      `${doing}: the RPC could not be reached (${unreachableReason(error)})`,
    );
  }
  // The node's error that is no revert (a revert is the call's answer): the chain failed us.
  const said = isRevert(error) ? undefined : nodeErrorOf(error);
  if (said !== undefined) {
    return failure("chain_unavailable", `${doing}: the RPC answered with an error (${said})`);
  }
  const text = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return failure("internal_error", `${doing}: ${text}`);
}

/** The payload's network against the requirements': the same words for every EVM method. */
function networkMismatch(request: PaymentRequest, x402Reason?: string): Failure | null {
  if (request.payloadNetwork === request.requirements.network) return null;
  return failure(
    "network_mismatch",
    `the payload's network "${request.payloadNetwork}" differs from the requirements' "${request.requirements.network}"`,
    x402Reason === undefined ? {} : { x402Reason },
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

/** Scheme, EIP-712 domain and network, in the reference's order: the domain name and version. */
export function checkAgreement(
  request: PaymentRequest,
): Step<{ readonly name: string; readonly version: string }> {
  if (request.payloadScheme !== request.requirements.scheme) {
    return {
      ok: false,
      failure: failure(
        "scheme_mismatch",
        `the payload's scheme "${request.payloadScheme}" differs from the requirements' "${request.requirements.scheme}"`,
      ),
    };
  }
  const domain = eip712Domain(request);
  if (!domain.ok) return domain;
  const network = networkMismatch(request);
  if (network) return { ok: false, failure: network };
  return { ok: true, value: { name: domain.name, version: domain.version } };
}

/** What the payer signed, as far as the requirements are concerned. */
export interface SignedTerms {
  readonly to: Address;
  readonly value: bigint;
  readonly validAfter: bigint;
  readonly validBefore: bigint;
}

/** The checks that need no chain, in the reference's order after the signature. */
export function checkTerms(
  ctx: EvmContext,
  request: PaymentRequest,
  terms: SignedTerms,
  requirements: EvmRequirements,
): Failure | null {
  const now = BigInt(Math.floor(ctx.now()));
  if (!isAddressEqual(terms.to, requirements.payTo)) {
    return failure(
      "recipient_mismatch",
      `the authorization pays ${terms.to}, requirements.payTo is ${requirements.payTo}`,
    );
  }
  if (terms.validBefore < now + DEADLINE_HEADROOM_SECONDS) {
    return failure(
      "authorization_expired",
      tooLate(
        "the authorization",
        `${request.paths.payload}.payload.authorization.validBefore`,
        terms.validBefore,
        now,
        DEADLINE_HEADROOM_SECONDS,
      ),
    );
  }
  if (terms.validAfter > now) {
    return failure(
      "authorization_not_yet_valid",
      tooEarly(
        "the authorization",
        `${request.paths.payload}.payload.authorization.validAfter`,
        terms.validAfter,
        now,
      ),
    );
  }
  if (terms.value !== requirements.amount) {
    return failure(
      "amount_mismatch",
      `the authorization is for ${terms.value}, the requirements ask for exactly ${requirements.amount}`,
      request.x402Version === 1 ? { x402Reason: "invalid_exact_evm_authorization_value" } : {},
    );
  }
  return null;
}

/**
 * The asset-has-code answer is cached for verifies. A settle reads it afresh (one more read in
 * its batch): a chain that went away can come back without the code (a devnet or fork restarted),
 * and a transfer sent to no code "succeeds" moving nothing, wasting gas and throttling the asset.
 */
const contractAssets = new Map<string, number>();
const ASSET_CACHE_MS = 15 * 60_000;
const ASSET_CACHE_MAX = 4096;

export async function assetIsContract(
  ctx: EvmContext,
  asset: Address,
  settling = false,
): Promise<boolean> {
  const key = `${ctx.chainId}:${asset}`;
  const cachedAt = contractAssets.get(key);
  if (!settling && cachedAt !== undefined && Date.now() - cachedAt < ASSET_CACHE_MS) return true;
  const isContract = await hasCode(ctx, asset);
  if (isContract) {
    setNewest(contractAssets, key, Date.now(), ASSET_CACHE_MAX);
  }
  return isContract;
}

/**
 * Creation code that returns EXTCODESIZE(address) as one word: PUSH20 address, EXTCODESIZE,
 * PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN (PUSH1 0, not PUSH0: chains before Shanghai run it).
 */
const codeSizeCall = (address: Address) => `0x73${address.slice(2)}3b60005260206000f3` as const;
const WORD = /^0x[0-9a-fA-F]{64}$/;
/** Chains whose node would not run codeSizeCall (no creation calls, another VM): eth_getCode. */
const noCodeSizeCall = new Set<number>();

/**
 * Whether `address` has code, as the size of its code (a 32-byte answer) rather than the code
 * itself: every settle asks this of the asset, and eth_getCode answered its whole bytecode
 * (13 KB of JSON for the devnet's USDC) to be read, parsed and dropped. A node that answers the
 * size call with an error or not one word is asked eth_getCode, from then on, as before.
 */
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

/** asset_not_contract, or a chain failure, from an asset check started earlier. */
export function assetFailure(
  ctx: EvmContext,
  asset: Address,
  checked: { ok: true; value: boolean } | { ok: false; error: unknown } | undefined,
): Failure | null {
  if (!checked) return null;
  if (!checked.ok) return chainFailure(checked.error, "reading the asset's code");
  if (checked.value) return null;
  return failure("asset_not_contract", `no contract at ${asset} on chain ${ctx.chainId}`);
}
