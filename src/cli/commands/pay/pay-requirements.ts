/** What `facilitator pay` pays (from --requirements, preferring `exact`), and on which network. */

import type { RequirementsJson } from "../../../evm/client/sign-payment.js";
import { FacilitatorError } from "../../../protocol/errors.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name } from "../../../protocol/networks.js";
import { looksSolana, solanaNetworkOf } from "../../../protocol/solana-networks.js";
import { isObject } from "../../../protocol/words.js";
import type { RpcRegistry } from "../../../rpc/rpc.js";
import { UsageError } from "../../io/errors.js";
import { readJson } from "../../io/input.js";

export interface PickedRequirements {
  readonly requirements: RequirementsJson;
  readonly x402Version: 1 | 2;
  readonly amount: bigint;
}

/** An EVM chain, or a Solana cluster (its CAIP-2 id, and the name the user gave it). */
export type PayTarget =
  | { readonly kind: "evm"; readonly chainId: number }
  | { readonly kind: "svm"; readonly network: string; readonly named: string };

/** The network, in either form (v1 name or CAIP-2), or undefined when it is none. */
function targetNamed(network: string): PayTarget | undefined {
  if (looksSolana(network)) {
    const id = solanaNetworkOf(network, 1) ?? solanaNetworkOf(network, 2);
    return id === undefined ? undefined : { kind: "svm", network: id, named: network };
  }
  const chainId = chainIdOfCaip2(network) ?? chainIdOfV1Name(network);
  return chainId === undefined ? undefined : { kind: "evm", chainId };
}

/** One id per network, whichever way it is written: eip155:<id> or solana:<genesis prefix>. */
function networkId(network: string): string | undefined {
  const target = targetNamed(network);
  return target?.kind === "evm" ? caip2(target.chainId) : target?.network;
}

/** The schemes `pay` signs, in the order it prefers them. */
export const PAY_SCHEMES = ["exact", "batch-settlement"] as const;
export type PayScheme = (typeof PAY_SCHEMES)[number];

function payable(value: unknown): value is RequirementsJson {
  if (!isObject(value) || typeof value.network !== "string") return false;
  if (!(PAY_SCHEMES as readonly unknown[]).includes(value.scheme)) return false;
  const id = networkId(value.network);
  return id !== undefined && (value.scheme === "exact" || id.startsWith("eip155:"));
}

/** --requirements' pick (on --network, of `scheme` if named), or undefined without the flag. */
export async function requirementsFile(
  flags: { readonly requirements?: string | undefined; readonly network?: string | undefined },
  scheme?: PayScheme,
): Promise<PickedRequirements | undefined> {
  const source = flags.requirements;
  if (!source) return undefined;
  const value = await readJson(source, `--requirements ${source}`);
  const candidates = (
    Array.isArray(value)
      ? value
      : isObject(value) && Array.isArray(value.accepts)
        ? value.accepts
        : [value]
  ).filter(payable);
  const { network } = flags;
  const wanted = network === undefined ? undefined : networkId(network);
  const onNetwork = candidates.filter(
    (c) => wanted === undefined || networkId(c.network) === wanted,
  );
  const pool = onNetwork.length > 0 ? onNetwork : candidates;
  const requirements = (scheme ? [scheme] : PAY_SCHEMES)
    .map((s) => pool.find((c) => c.scheme === s))
    .find((c) => c !== undefined);
  if (!requirements) {
    throw new UsageError(
      `--requirements ${source} holds no ${scheme ? `"${scheme}"` : `"exact" or "batch-settlement"`} PaymentRequirements on an EVM or Solana network (eip155:<id>, solana:<genesis hash prefix> or a v1 name; batch-settlement: EVM only)`,
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

/** A throw as an expression, for defaults chained with ?:. */
export const fail = (error: Error): never => {
  throw error;
};

/** --valid-for (at least 7 s), else the requirements' maxTimeoutSeconds, else 300. */
export function maxTimeoutOf(text: string | undefined, base: RequirementsJson | undefined): number {
  const validFor = text === undefined ? undefined : Number(text);
  if (validFor !== undefined && (!Number.isSafeInteger(validFor) || validFor < 7)) {
    throw new UsageError("--valid-for must be a whole number of seconds, at least 7");
  }
  return validFor ?? base?.maxTimeoutSeconds ?? 300;
}

/** The file's requirements overridden by `fields`; v1 with a resource and maxAmountRequired. */
export function payRequirements(
  x402Version: 1 | 2,
  base: RequirementsJson | undefined,
  fields: RequirementsJson & { amount: string },
  v1Resource: string,
): RequirementsJson {
  const { amount: _a, maxAmountRequired: _m, ...rest }: Record<string, unknown> = base ?? {};
  const v2: RequirementsJson = { ...rest, ...fields };
  if (x402Version === 2) return v2;
  const v1 = Object.entries(v2).map(([k, v]) => [k === "amount" ? "maxAmountRequired" : k, v]);
  return {
    resource: v1Resource,
    description: "paid with facilitator pay",
    mimeType: "application/json",
    ...Object.fromEntries(v1),
  };
}

/** --network, the requirements', or the one configured RPC's; `evmOnly`: EVM chains alone. */
export async function targetOf(
  network: string | undefined,
  rpc: RpcRegistry,
  evmOnly?: string,
): Promise<PayTarget> {
  if (network !== undefined) {
    const target = targetNamed(network);
    if (target) return target;
    const shown = network.slice(0, 60);
    throw new UsageError(
      looksSolana(network)
        ? `--network ${shown} is not a Solana network: use solana:<first 32 characters of the genesis hash>, or a v1 name: solana, solana-devnet, solana-testnet`
        : `--network ${shown} is not a network: use eip155:<chain id>, solana:<genesis hash prefix> or a v1 name such as base-sepolia or solana-devnet`,
    );
  }
  const [chainIds, clusters] = await Promise.all([
    rpc.configuredChainIds(),
    rpc.servedSolanaNetworks(),
  ]);
  const served: PayTarget[] = [
    ...chainIds.map((chainId) => ({ kind: "evm" as const, chainId })),
    ...(evmOnly ? [] : clusters.map((id) => ({ kind: "svm" as const, network: id, named: id }))),
  ];
  if (served.length === 1) return served[0] as PayTarget;
  const down = (await rpc.endpoints()).filter(
    (e) => e.chainId === undefined && e.solana === undefined,
  );
  if (served.length === 0 && down.length > 0) {
    throw FacilitatorError.of(
      "chain_unavailable",
      `the configured RPC ${down.map((e) => e.url).join(", ")} could not be reached to learn which chain it serves`,
    );
  }
  if (evmOnly && served.length === 0 && clusters.length > 0) {
    throw new UsageError(
      `${evmOnly} is served on EVM chains only, and the configured RPCs serve ${clusters.join(", ")}: pass --rpc-url with an EVM chain's RPC`,
    );
  }
  if (served.length === 0) {
    throw new UsageError(
      "which chain? no reachable RPC is configured: pass --network, and --rpc-url (or source a devnet's devnet.env)",
    );
  }
  const listed = [...chainIds.map(caip2), ...(evmOnly ? [] : clusters)].join(", ");
  throw new UsageError(
    `which chain? the configured RPCs serve ${listed}${evmOnly ? ` (${evmOnly}: EVM only)` : ""}: pass --network`,
  );
}
