/** A settle: what was claimed for a receiver in one token, swept to it by settle(receiver, token). */
import { isAddressEqual, parseEventLogs } from "viem";
import { failed } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { sendAction } from "../send-action.js";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS, settlementCall } from "./constants.js";
import { parsePayload, sweepSchema } from "./payload.js";
import { rejected, wouldRevert } from "./reasons.js";
import { BATCH_GAS } from "./settings.js";

export async function settleSweep(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parsePayload(request, sweepSchema, "settle");
  if (!parsed.ok) return parsed;
  const { receiver, token } = parsed.value;
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
    return failed(
      rejected(
        "nothing_to_settle",
        `nothing is claimed and unsettled for ${receiver} in ${token} (claimed ${claimed}, settled ${settled})`,
      ),
    );
  }
  const sent = await sendAction(
    ctx,
    {
      key: `batch-settle:${ctx.chainId}:${receiver}:${token}:${claimed}`.toLowerCase(),
      call: settlementCall("settle", [receiver, token]),
      gas: { use: BATCH_GAS.settle, asset: token },
      // Its receiver asked for it: a settle that reverts is charged as a payer's would be.
      name: "settle",
      payment: request,
      chargeTo: [{ payer: receiver, asset: token }],
      reverts: (detail) => wouldRevert("settle", detail),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  // What moved, from the receipt's Settled event; before it is mined, what was owed.
  const moved = sent.receipt
    ? parseEventLogs({ abi: SETTLEMENT_ABI, eventName: "Settled", logs: sent.receipt.logs }).find(
        (log) =>
          isAddressEqual(log.address, SETTLEMENT_ADDRESS) &&
          isAddressEqual(log.args.receiver, receiver) &&
          isAddressEqual(log.args.token, token),
      )?.args.amount
    : claimed - settled;
  return { ok: true, payer: "", transactionHash: sent.hash, amount: (moved ?? 0n).toString() };
}
