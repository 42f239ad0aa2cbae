/** Most gas a settlement may use, fixed per method, never estimated: the payer picks the
 * `asset`, so an estimate is what its contract says. Over it, nothing is sent. */
import type { Address } from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2, knownNetwork } from "../../protocol/networks.js";
import { fullText } from "./outcome.js";

/** The bounds, by what the transaction does; the last two are added to a method's bound. */
export const DEFAULT_GAS_BOUNDS = {
  /** transferWithAuthorization: 68,814 on the devnet's USDC, 85,914 to a new recipient. */
  eip3009: 120_000,
  /** The x402 exact Permit2 proxy's settle: 100,399 on the devnet. */
  permit2: 200_000,
  /** The proxy's settleWithPermit (the eip2612GasSponsoring extension): 124,392. */
  permit2Eip2612: 300_000,
  /** The x402 upto Permit2 proxy's settle: 84,426. */
  upto: 200_000,
  /** The upto proxy's settleWithPermit. */
  uptoEip2612: 300_000,
  /** An EIP-2612 permit for our settlement key (the x402x permit method's first transaction). */
  permit: 120_000,
  /** transferFrom by our settlement key (the x402x permit method's payment): 35,364. */
  transferFrom: 120_000,
  /** Ether for the payer's own approval's gas (erc20ApprovalGasSponsoring): 21,000 to an account. */
  fund: 50_000,
  /** Added for a payer that is a contract wallet: its isValidSignature runs in the transfer. */
  contractWallet: 300_000,
  /** Added for a wallet deployed in the settling transaction (ERC-6492). */
  walletDeployment: 500_000,
} as const;

export type GasBoundName = keyof typeof DEFAULT_GAS_BOUNDS;
/** The family's bounds, and the registered schemes' own by name. */
export type GasBounds = Readonly<Record<GasBoundName, bigint>> &
  Readonly<Partial<Record<string, bigint>>>;
type GasUse = Exclude<GasBoundName, "contractWallet" | "walletDeployment">;
export type ConfiguredGas = Readonly<Partial<Record<string, bigint>>>;
/** Gas bounds set by the operator: for all chains, and per chain (which wins). */
export interface GasBoundsConfig {
  readonly all?: ConfiguredGas | undefined;
  readonly byChain?: Readonly<Record<number, ConfiguredGas>>;
}

export const GAS_BOUND_NAMES = Object.keys(DEFAULT_GAS_BOUNDS) as GasBoundName[];

/** A scheme's own kind of transaction; registered (EvmScheme.gas) it is scaled and configurable. */
export interface SchemeGas {
  readonly name: string;
  readonly gas: bigint;
  /** In a refusal: "a memo transaction". */
  readonly what: string;
}

/** What one settlement transaction is allowed, and what to call it in a refusal. */
export interface GasNeed {
  readonly use: GasUse | SchemeGas;
  readonly contractWallet?: boolean | undefined;
  /** The call deploys the payer's wallet first (ERC-6492). */
  readonly deployment?: boolean | undefined;
  readonly asset: Address;
  /** Rows the transaction applies, each adding its own bound (a claim's channels). */
  readonly rows?: { readonly count: number; readonly each: SchemeGas } | undefined;
}

const USES: Readonly<Record<GasUse, string>> = {
  eip3009: "an EIP-3009 transfer",
  permit2: "a Permit2 transfer",
  permit2Eip2612: "a Permit2 transfer with an EIP-2612 permit",
  upto: "an upto Permit2 transfer",
  uptoEip2612: "an upto Permit2 transfer with an EIP-2612 permit",
  permit: "an EIP-2612 permit",
  transferFrom: "a transferFrom",
  fund: "the payer's approval gas",
};

/** The bounds for `chainId`: configured per chain, else for all, else defaults scaled (L1 data). */
export function gasBoundsFor(
  chainId: number,
  configured: GasBoundsConfig = {},
  schemeGas: readonly SchemeGas[] = [],
): GasBounds {
  const scale = BigInt(knownNetwork(chainId)?.gasScale ?? 1);
  const bounds: Record<string, bigint> = {};
  const ours = GAS_BOUND_NAMES.map((name) => ({ name, gas: BigInt(DEFAULT_GAS_BOUNDS[name]) }));
  for (const { name, gas } of [...ours, ...schemeGas]) {
    bounds[name] = configured.byChain?.[chainId]?.[name] ?? configured.all?.[name] ?? gas * scale;
  }
  return bounds as GasBounds;
}

const boundOf = (bounds: GasBounds, use: GasUse | SchemeGas): bigint =>
  typeof use === "string" ? bounds[use] : (bounds[use.name] ?? use.gas);

export function gasBound(bounds: GasBounds, need: GasNeed): bigint {
  const rows = need.rows ? BigInt(need.rows.count) * boundOf(bounds, need.rows.each) : 0n;
  return (
    boundOf(bounds, need.use) +
    rows +
    (need.contractWallet ? bounds.contractWallet : 0n) +
    (need.deployment ? bounds.walletDeployment : 0n)
  );
}

/** Verify simulates with a contract wallet's bound (it may not know yet), failing only the unsettleable. */
export function simulationGas(bounds: GasBounds, use: GasNeed["use"], deployment = false): bigint {
  return gasBound(bounds, { use, contractWallet: true, deployment, asset: "0x" });
}

/** The settlement needs `gas` (undefined: more than estimable), over its bound: nothing is sent. */
export function overGasBound(
  chainId: number,
  need: GasNeed,
  bound: bigint,
  gas: bigint | undefined,
): Failure {
  const asked = gas === undefined ? "more" : grouped(gas);
  const use = typeof need.use === "string" ? need.use : need.use.name;
  const what = typeof need.use === "string" ? USES[need.use] : need.use.what;
  const setting = need.deployment
    ? `${use} + walletDeployment`
    : need.contractWallet
      ? `${use} + contractWallet`
      : use;
  return failure(
    "gas_limit_exceeded",
    `settling with asset ${need.asset} would take ${asked} gas, over the ${grouped(bound)} this facilitator allows for ${what}${need.contractWallet ? " from a contract wallet" : ""} on ${caip2(chainId)}; nothing was sent (an operator who trusts this token can raise gasBounds ${setting} in the config file)`,
  );
}

export function grouped(n: bigint): string {
  return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export const isOutOfGas = (error: unknown): boolean =>
  /out of gas|OutOfGas|gas required exceeds|intrinsic gas too low/i.test(fullText(error));
