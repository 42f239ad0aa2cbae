/**
 * Who used an EIP-3009 authorization the token says is used: anyone may submit it before us; the
 * answer says the payer paid (never a success, never someone else's hash as ours).
 */
import { type Address, type Hex, isAddressEqual, parseAbiItem } from "viem";
import { tokenAmount } from "../../protocol/amounts.js";
import type { EvmTransfer } from "../chain/entry.js";
import { receiptHasTransfer } from "../chain/receipts.js";
import { tokenUnits } from "../chain/token-units.js";
import type { EvmContext } from "../context.js";

const used = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const canceled = parseAbiItem(
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
);
/** How far back to look: providers refuse wide log ranges, and a replay is usually fresh. */
const LOOKBACK_BLOCKS = 5_000n;

/** A sentence on how the nonce was used, when the chain's recent logs tell. */
export async function howUsed(
  ctx: EvmContext,
  authorizer: Address,
  nonce: Hex,
  expect: EvmTransfer,
): Promise<string | undefined> {
  const { token } = expect;
  try {
    const latest = await ctx.client.getBlockNumber();
    const fromBlock = latest > LOOKBACK_BLOCKS ? latest - LOOKBACK_BLOCKS : 0n;
    const filter = { address: token, args: { authorizer, nonce }, fromBlock, toBlock: latest };
    const [uses, cancels] = await Promise.all([
      ctx.client.getLogs({ ...filter, event: used }),
      ctx.client.getLogs({ ...filter, event: canceled }),
    ]);
    if (cancels[0]) return `the payer cancelled it in ${cancels[0].transactionHash}`;
    const hash = uses[0]?.transactionHash;
    if (!hash) return undefined;
    const receipt = await ctx.client.getTransactionReceipt({ hash });
    const paid = receiptHasTransfer(receipt, expect);
    // Sent by one of our keys (a journal this process lacks): said so, not "not by this facilitator".
    const ours = ctx.ownSenders.some((a) => isAddressEqual(a, receipt.from));
    const sender = isAddressEqual(receipt.from, expect.to)
      ? "the payee"
      : ours
        ? `${receipt.from} (a settlement key of this facilitator)`
        : receipt.from;
    if (!paid) return `it was used in ${hash} (sent by ${sender}) for another transfer`;
    const units = await tokenUnits(ctx.client, ctx.chainId, token).catch(() => undefined);
    const amount = tokenAmount(BigInt(expect.value), units);
    return ours
      ? `it already paid ${expect.to} ${amount} in ${hash}, sent by ${sender}: the payer did pay`
      : `it already paid ${expect.to} ${amount} in ${hash}, a transaction sent by ${sender}, not by this facilitator: the payer did pay`;
  } catch {
    return undefined;
  }
}
