/**
 * The most gas a settlement transaction may use, chosen by us per transfer method, never taken from
 * an estimate of someone else's code: the payer picks the `asset` contract, so an estimate is only
 * what that contract says it needs. A settlement whose estimate (or simulation) needs more than
 * its bound is refused before anything is sent; one that is sent carries at most its bound.
 */
import type { Address } from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2, knownNetwork } from "../../protocol/networks.js";

/**
 * The bounds, by what the transaction does. The last two are added to a method's bound: a
 * contract wallet's signature check (ERC-1271) and an undeployed wallet's deployment (ERC-6492).
 */
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
/** The family's bounds, and those of the registered schemes' own kinds of transaction by name. */
export type GasBounds = Readonly<Record<GasBoundName, bigint>> &
  Readonly<Partial<Record<string, bigint>>>;
/** What a transaction does, as far as its gas is concerned. */
export type GasUse = Exclude<GasBoundName, "contractWallet" | "walletDeployment">;
/** Bounds as configured, by name: the family's and the schemes' (SchemeGas.name). */
export type ConfiguredGas = Readonly<Partial<Record<string, bigint>>>;

export const GAS_BOUND_NAMES = Object.keys(DEFAULT_GAS_BOUNDS) as GasBoundName[];

/**
 * A scheme's own kind of transaction, bounded by what the scheme declares. Registered with the
 * scheme (EvmScheme.gas), it is scaled as the family's are and the operator may set it by name in
 * gasBounds; unregistered, `gas` is its bound as it stands.
 */
export interface SchemeGas {
  readonly name: string;
  readonly gas: bigint;
  /** In a refusal: "a memo transaction". */
  readonly what: string;
}

/** What one settlement transaction is allowed, and what to call it in a refusal. */
export interface GasNeed {
  readonly use: GasUse | SchemeGas;
  /** The payer is a contract wallet (its signature check runs in the call). */
  readonly contractWallet?: boolean | undefined;
  /** The call deploys the payer's wallet first (ERC-6492). */
  readonly deployment?: boolean | undefined;
  /** The token paid with: a refusal names it. */
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

/**
 * The bounds for `chainId`: the defaults, scaled on chains whose gas also pays for L1 data (see
 * networks.ts), then what the operator configured for every chain and for this one; the schemes'
 * own (`schemeGas`) likewise.
 */
export function gasBoundsFor(
  chainId: number,
  configured: {
    readonly all?: ConfiguredGas | undefined;
    readonly byChain?: Readonly<Record<number, ConfiguredGas>> | undefined;
  } = {},
  schemeGas: readonly SchemeGas[] = [],
): GasBounds {
  const scale = BigInt(knownNetwork(chainId)?.gasScale ?? 1);
  const bounds: Record<string, bigint> = {};
  const defaults: [string, bigint][] = [
    ...GAS_BOUND_NAMES.map((name): [string, bigint] => [name, BigInt(DEFAULT_GAS_BOUNDS[name])]),
    ...schemeGas.map((use): [string, bigint] => [use.name, use.gas]),
  ];
  for (const [name, gas] of defaults) {
    bounds[name] = configured.byChain?.[chainId]?.[name] ?? configured.all?.[name] ?? gas * scale;
  }
  return bounds as GasBounds;
}

/** A use's own bound: the family's by name, a scheme's as registered (else as it declares). */
const boundOf = (bounds: GasBounds, use: GasUse | SchemeGas): bigint =>
  typeof use === "string" ? bounds[use] : (bounds[use.name] ?? use.gas);

/** The most gas this transaction may use. */
export function gasBound(bounds: GasBounds, need: GasNeed): bigint {
  const rows = need.rows ? BigInt(need.rows.count) * boundOf(bounds, need.rows.each) : 0n;
  return (
    boundOf(bounds, need.use) +
    rows +
    (need.contractWallet ? bounds.contractWallet : 0n) +
    (need.deployment ? bounds.walletDeployment : 0n)
  );
}

/**
 * The gas a verify-time simulation runs with: enough for the method from a contract wallet (which
 * verify may not know yet), so only a transfer that could never be settled fails it.
 */
export function simulationGas(bounds: GasBounds, use: GasNeed["use"], deployment = false): bigint {
  return gasBound(bounds, { use, contractWallet: true, deployment, asset: "0x" });
}

/**
 * The settlement needs `gas` (undefined: more than the node would estimate), over its bound:
 * nothing is sent.
 */
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

/** 1234567 → "1,234,567". */
export function grouped(n: bigint): string {
  return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Whether a node's error says the call ran out of the gas it was given. */
export function isOutOfGas(error: unknown): boolean {
  const text =
    error instanceof Error
      ? `${error.message}\n${(error as { details?: string }).details ?? ""}`
      : String(error);
  return /out of gas|OutOfGas|gas required exceeds|intrinsic gas too low/i.test(text);
}
