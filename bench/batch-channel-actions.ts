/**
 * Opening and closing batch-settlement channels through a facilitator, as bench:batch's gas
 * rounds, its warm-up and its voucher-rate set-up do: each payer's deposit (verify, then settle),
 * and one claim of every channel's latest voucher followed by one settle (sweep) to the payee,
 * checked on chain.
 */
import type { Hex } from "viem";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { channelTotals, tokenBalance } from "./batch-chain-reads.js";
import { actionPayment, type Channel, claimRow, openPayment } from "./batch-channel-payloads.js";
import { inParallel } from "./batch-load.js";
import { check, fail } from "./batch-run-log.js";
import type { Target } from "./batch-server-processes.js";
import { type Json, settleAt, verifyAt, x402Body } from "./batch-x402-http.js";

/** Each payer's deposit (verify, then settle), `concurrency` at a time: the opened channels. */
export async function openChannels(
  chain: Devnet,
  target: Target,
  payers: readonly DevAccount[],
  accepted: Json,
  deposit: bigint,
  concurrency: number,
  where: string,
): Promise<{ channels: Channel[]; hashes: Hex[] }> {
  const opened = await Promise.all(
    payers.map((payer) => openPayment(chain, payer, accepted, deposit)),
  );
  const outcomes = await inParallel(opened, concurrency, async ({ payment }) => {
    const body = x402Body(payment, accepted);
    const verified = await verifyAt(target, body);
    if (!verified.ok) return { ...verified, error: `deposit verify: ${verified.error}` };
    const settled = await settleAt(target, body);
    return settled.ok ? settled : { ...settled, error: `deposit settle: ${settled.error}` };
  });
  check(where, outcomes);
  return {
    channels: opened.filter((_, i) => outcomes[i]?.ok).map((o) => o.channel),
    hashes: outcomes.flatMap((o) => (o.hash ? [o.hash] : [])),
  };
}

/** Claims every channel's latest voucher in one request, then sweeps the payee's claims. */
export async function claimAndSettle(
  chain: Devnet,
  target: Target,
  channels: readonly Channel[],
  accepted: Json,
  where: string,
): Promise<{ claim?: Hex; settle?: Hex }> {
  const claim = await settleAt(
    target,
    x402Body(actionPayment(accepted, { type: "claim", claims: channels.map(claimRow) }), accepted),
  );
  if (!claim.ok) {
    fail(where, `claim: ${claim.error}`);
    return {};
  }
  for (const channel of channels) {
    const { totalClaimed } = await channelTotals(chain, channel.id);
    if (totalClaimed !== channel.latest.amount) {
      fail(
        where,
        `channel ${channel.id} claimed ${totalClaimed}, expected ${channel.latest.amount}`,
      );
    }
  }
  const before = await tokenBalance(chain, chain.payee.address);
  const sweep = await settleAt(
    target,
    x402Body(
      actionPayment(accepted, {
        type: "settle",
        receiver: chain.payee.address,
        token: chain.token.address,
      }),
      accepted,
    ),
  );
  if (!sweep.ok) {
    fail(where, `settle: ${sweep.error}`);
    return { claim: claim.hash };
  }
  const moved = (await tokenBalance(chain, chain.payee.address)) - before;
  const expected = channels.reduce((sum, c) => sum + c.latest.amount, 0n);
  if (moved !== expected) fail(where, `the payee got ${moved}, expected ${expected}`);
  return { claim: claim.hash, settle: sweep.hash };
}
