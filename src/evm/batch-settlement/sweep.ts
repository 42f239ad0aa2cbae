/**
 * A settle: what was claimed for a receiver in one token, swept to it by `settle(receiver,
 * token)`. Each sweep takes everything claimed so far, so the claimed total names it.
 */
import { encodeFunctionData, isAddressEqual, parseEventLogs } from "viem";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { describeIssue } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { sendAction } from "../send-action.js";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "./constants.js";
import { officialShapeFailure, sweepSchema } from "./payload.js";
import { rejected } from "./reasons.js";
import { BATCH_GAS } from "./settings.js";

export async function settleSweep(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const wrongShape = officialShapeFailure("settle", request);
  if (wrongShape) return { ok: false, failure: wrongShape };
  const parsed = sweepSchema.safeParse(request.payload);
  if (!parsed.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
  }
  const { receiver, token } = parsed.data;
  let claimed: bigint;
  let settled: bigint;
  try {
    [claimed, settled] = await ctx.client.readContract({
      address: SETTLEMENT_ADDRESS,
      abi: SETTLEMENT_ABI,
      functionName: "receivers",
      args: [receiver, token],
    });
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading what the receiver has claimed") };
  }
  if (claimed <= settled) {
    return {
      ok: false,
      failure: rejected(
        "nothing_to_settle",
        "nothing_to_settle",
        `nothing is claimed and unsettled for ${receiver} in ${token} (claimed ${claimed}, settled ${settled})`,
      ),
    };
  }
  const sent = await sendAction(
    ctx,
    {
      key: `batch-settle:${ctx.chainId}:${receiver}:${token}:${claimed}`.toLowerCase(),
      call: {
        to: SETTLEMENT_ADDRESS,
        data: encodeFunctionData({
          abi: SETTLEMENT_ABI,
          functionName: "settle",
          args: [receiver, token],
        }),
      },
      gas: { use: BATCH_GAS.settle, asset: token },
      // Its receiver asked for it: a settle that reverts is charged as a payer's would be.
      name: "settle",
      payment: request,
      chargeTo: [{ payer: receiver, asset: token }],
      reverts: (detail) =>
        rejected(
          "simulation_failed",
          "settle_simulation_failed",
          `the settle would revert${detail ? `: ${detail}` : ""}`,
        ),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  // What moved, from the receipt's Settled event; before it is mined, what was owed.
  let amount = claimed - settled;
  if (sent.receipt) {
    const logs = parseEventLogs({
      abi: SETTLEMENT_ABI,
      eventName: "Settled",
      logs: sent.receipt.logs,
    });
    const ours = logs.find(
      (log) =>
        isAddressEqual(log.address, SETTLEMENT_ADDRESS) &&
        isAddressEqual(log.args.receiver, receiver) &&
        isAddressEqual(log.args.token, token),
    );
    amount = ours?.args.amount ?? 0n;
  }
  return { ok: true, payer: "", transactionHash: sent.hash, amount: amount.toString() };
}
