/**
 * POST /accepts for Solana `exact`: an offer on a served cluster gets one of our fee payers, its
 * CAIP-2 network and a timeout; one naming a fee payer not ours is left out (we could not settle it).
 */
import { isSolanaAddress, solanaNetworkOf } from "../protocol/solana-networks.js";

export interface SvmAcceptsContext {
  /** The Solana clusters (CAIP-2) served here. */
  readonly served: ReadonlySet<string>;
  /** Our fee payers' addresses. */
  readonly feePayers: readonly string[];
  /** The next of our fee payers, in turn, for an offer that names none. */
  readonly nextFeePayer: () => string;
}

/** One offered Solana requirement, completed, or undefined when this facilitator cannot settle it. */
export function completeSvm(
  ctx: SvmAcceptsContext,
  offered: Record<string, unknown> & { network: string },
  defaultTimeout: number,
): Record<string, unknown> | undefined {
  if (ctx.feePayers.length === 0) return undefined;
  const network = solanaNetworkOf(offered.network, 1) ?? solanaNetworkOf(offered.network, 2);
  if (network === undefined || !ctx.served.has(network)) return undefined;
  const { asset, payTo, amount } = offered;
  if (!isSolanaAddress(asset) || !isSolanaAddress(payTo)) return undefined;
  if (typeof amount !== "string" || !/^\d+$/.test(amount)) return undefined;
  const extra: Record<string, unknown> =
    typeof offered.extra === "object" && offered.extra !== null && !Array.isArray(offered.extra)
      ? { ...offered.extra }
      : {};
  if (extra.feePayer !== undefined) {
    if (typeof extra.feePayer !== "string" || !ctx.feePayers.includes(extra.feePayer)) {
      return undefined;
    }
  } else {
    extra.feePayer = ctx.nextFeePayer();
  }
  const timeout = offered.maxTimeoutSeconds;
  return {
    ...offered,
    network,
    maxTimeoutSeconds:
      typeof timeout === "number" && Number.isInteger(timeout) && timeout > 0
        ? timeout
        : defaultTimeout,
    extra,
  };
}
