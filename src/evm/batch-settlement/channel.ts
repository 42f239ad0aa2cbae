/** A payment channel: its id, whether its configuration fits the requirements, its state. */
import { type Address, type Hex, isAddressEqual, zeroAddress } from "viem";
import type { Requirements } from "../../protocol/request.js";
import type { EvmContext } from "../context.js";
import {
  MAX_WITHDRAW_DELAY,
  MIN_WITHDRAW_DELAY,
  settlementCall,
  settlementResult,
} from "./constants.js";
import { channelIdOf } from "./digests.js";
import type { ChannelConfig, ChannelPayload } from "./payload.js";
import { rejected } from "./reasons.js";

export { channelIdOf } from "./digests.js";

const sameAddress = (a: unknown, b: Address) =>
  typeof a === "string" && /^0x[0-9a-fA-F]{40}$/.test(a) && isAddressEqual(a as Address, b);

/** Why `config` cannot be channel `channelId` paying `requirements`, in the official order. */
export function channelMismatch(
  { channelConfig: config, voucher: { channelId } }: ChannelPayload,
  requirements: Requirements,
  chainId: number,
  /** A refund to settle: its requirements name only the receiver and the token. */
  settling = false,
) {
  if (channelIdOf(config, chainId) !== channelId.toLowerCase()) {
    return rejected(
      "channel_id_mismatch",
      `the channel id ${channelId} is not the hash of its channelConfig on chain ${chainId}`,
    );
  }
  if (!sameAddress(requirements.payTo, config.receiver)) {
    return rejected(
      "receiver_mismatch",
      `the channel pays ${config.receiver}, not requirements.payTo ${requirements.payTo}`,
    );
  }
  const extra = requirements.extra ?? {};
  const authorizer = extra.receiverAuthorizer;
  if (settling) return tokenMismatch(config, requirements);
  if (
    !sameAddress(authorizer, config.receiverAuthorizer) ||
    isAddressEqual(config.receiverAuthorizer, zeroAddress)
  ) {
    return rejected(
      "receiver_authorizer_mismatch",
      `the channel's receiverAuthorizer ${config.receiverAuthorizer} is not requirements.extra.receiverAuthorizer (${String(authorizer)})`,
    );
  }
  const token = tokenMismatch(config, requirements);
  if (token) return token;
  if (extra.withdrawDelay !== undefined && config.withdrawDelay !== Number(extra.withdrawDelay)) {
    return rejected(
      "withdraw_delay_mismatch",
      `the channel's withdrawDelay ${config.withdrawDelay} is not requirements.extra.withdrawDelay ${String(extra.withdrawDelay)}`,
    );
  }
  if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
    return rejected(
      "withdraw_delay_out_of_range",
      `the channel's withdrawDelay ${config.withdrawDelay} s is outside ${MIN_WITHDRAW_DELAY}–${MAX_WITHDRAW_DELAY} s`,
    );
  }
  return undefined;
}

function tokenMismatch(config: ChannelConfig, requirements: Requirements) {
  if (sameAddress(requirements.asset, config.token)) return undefined;
  return rejected(
    "token_mismatch",
    `the channel holds ${config.token}, not requirements.asset ${requirements.asset}`,
  );
}

/** A channel as the contract holds it. */
export interface ChannelState {
  readonly balance: bigint;
  readonly totalClaimed: bigint;
  /** Unix seconds a timed withdrawal was started; 0 when none is pending. */
  readonly withdrawRequestedAt: number;
  readonly refundNonce: bigint;
}

/** Views of one channel each, read in one `eth_call` through the settlement's `multicall`. */
export async function readViews(
  ctx: EvmContext,
  views: readonly (readonly [(typeof STATE_VIEWS)[number], Hex])[],
): Promise<unknown[]> {
  const calls = views.map(([view, channelId]) => settlementCall(view, [channelId]).data);
  const { data } = await ctx.client.call(settlementCall("multicall", [calls]));
  const results = settlementResult("multicall", data ?? "0x") as readonly Hex[];
  return views.map(([view], i) => settlementResult(view, results[i] as Hex));
}

const STATE_VIEWS = ["channels", "pendingWithdrawals", "refundNonce"] as const;

/** The channel's state at the latest block, in one call (not one per view). */
export async function readChannel(ctx: EvmContext, channelId: Hex): Promise<ChannelState> {
  const views = STATE_VIEWS.map((view) => [view, channelId] as const);
  const [[balance, totalClaimed], [, initiatedAt], refundNonce] = (await readViews(ctx, views)) as [
    readonly [bigint, bigint],
    readonly [bigint, number],
    bigint,
  ];
  return { balance, totalClaimed, withdrawRequestedAt: Number(initiatedAt), refundNonce };
}

/** The channel state answers carry in `extra`, as the official facilitator writes it. */
export function stateExtra(channelId: Hex, state: ChannelState) {
  return {
    channelId,
    balance: state.balance.toString(),
    totalClaimed: state.totalClaimed.toString(),
    withdrawRequestedAt: state.withdrawRequestedAt,
    refundNonce: state.refundNonce.toString(),
  };
}
