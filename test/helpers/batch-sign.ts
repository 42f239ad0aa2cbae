/** A receiver authorizer's signature over a claim batch, as a seller that signs its own makes it. */
import type { Hex, LocalAccount } from "viem";
import { channelIdOf } from "../../src/evm/batch-settlement/channel.js";
import { CLAIM_BATCH_TYPES, settlementDomain } from "../../src/evm/batch-settlement/constants.js";
import { channelConfigSchema } from "../../src/evm/batch-settlement/payload.js";

interface Row {
  readonly voucher: { readonly channel: unknown; readonly maxClaimableAmount: string };
  readonly totalClaimed: string;
}

export function signClaimBatch(
  signer: LocalAccount,
  rows: readonly Row[],
  chainId: number,
): Promise<Hex> {
  return signer.signTypedData({
    domain: settlementDomain(chainId),
    types: CLAIM_BATCH_TYPES,
    primaryType: "ClaimBatch",
    message: {
      claims: rows.map((row) => ({
        channelId: channelIdOf(channelConfigSchema.parse(row.voucher.channel), chainId),
        maxClaimableAmount: BigInt(row.voucher.maxClaimableAmount),
        totalClaimed: BigInt(row.totalClaimed),
      })),
    },
  });
}
