/** The EVM family's options (family.ts fills in the defaults of each chain's context). */
import type { Address, LocalAccount } from "viem";
import type { Answers } from "../core/answers.js";
import type { MetricsSink } from "../core/metrics.js";
import type { BuilderCode } from "./chain/builder-code.js";
import type { GasBoundsConfig } from "./chain/gas-bounds.js";
import type { EvmScheme } from "./scheme.js";
import type { SchemeOptions } from "./schemes.js";

/** The family's options, and each registered scheme's own (schemes.ts). */
export interface EvmOptions extends SchemeOptions {
  readonly signers?: readonly LocalAccount[] | undefined;
  /** Our settlement addresses where we hold no key (the CLI's verify): their transactions are ours. */
  readonly settlementAddresses?: readonly Address[] | (() => readonly Address[]) | undefined;
  /** The schemes served (default: schemes.ts). */
  readonly schemes?: readonly EvmScheme[] | undefined;
  /** The ERC-8021 builder code every settlement transaction carries; none by default. */
  readonly builderCode?: BuilderCode | undefined;
  /** Most a settlement may cost, in wei (default: per network); per chain wins. */
  readonly maxFeeWei?: bigint | undefined;
  readonly maxFeeWeiByChain?: Readonly<Record<number, bigint>> | undefined;
  /** The most gas each kind of settlement transaction may use (default: chain/gas-bounds.ts). */
  readonly gasBounds?: GasBoundsConfig | undefined;
  /** Wasted gas per chain and hour before payers wait (default 500,000); per chain wins. */
  readonly wastedGasBudget?: bigint | undefined;
  readonly wastedGasBudgetByChain?: Readonly<Record<number, bigint>> | undefined;
  /** Per chain id, the only assets settled there (default: any). */
  readonly allowedAssets?: Readonly<Record<number, readonly Address[]>> | undefined;
  /** Replace a transaction stuck in the mempool this long with a higher fee (default 15 s). */
  readonly replaceAfterMs?: number | undefined;
  /** How long `confirmed` waits for a receipt (default 60 s). */
  readonly confirmTimeoutMs?: number | undefined;
  /** Blocks a receipt must be deep before `confirmed` answers (default 1: mined). */
  readonly confirmations?: number | undefined;
  /** Watch `submitted` settlements land in the background (a long-running server). */
  readonly watchSubmitted?: boolean | undefined;
  /** Factories whose undeployed (ERC-6492) wallets may pay; none by default, as the reference. */
  readonly erc6492Factories?: readonly Address[] | undefined;
  /** Receipt polling interval (default 250 ms). */
  readonly receiptPollMs?: number | undefined;
  /** Unix seconds; tests may pin it. */
  readonly now?: (() => number) | undefined;
  readonly metrics?: MetricsSink | undefined;
  /** Told when a hold ends (a shared store updates its copy). */
  readonly onFree?: ((key: string, landedIn?: bigint) => void) | undefined;
  /** Successes written down before they are answered (default: one of this family's own). */
  readonly answers?: Answers | undefined;
}
