/**
 * The voucher hot path's digests (src/evm/batch-settlement/digests.ts, cached domain separator and
 * remembered channel ids) equal viem's hashTypedData and the official client's channel id, for
 * random channels on several chains, also when asked again (from the cache).
 */
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { type Hex, hashTypedData, toHex } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { describe, expect, test } from "vitest";
import {
  CHANNEL_CONFIG_TYPES,
  settlementDomain,
  VOUCHER_TYPES,
} from "../src/evm/batch-settlement/constants.js";
import { channelIdOf, voucherDigest } from "../src/evm/batch-settlement/digests.js";

const someAddress = () => privateKeyToAddress(generatePrivateKey());
const randomBytes32 = () => toHex(crypto.getRandomValues(new Uint8Array(32)));

describe("batch-settlement digests", () => {
  test("channel ids and voucher digests equal viem's and the official client's", () => {
    for (const chainId of [31337, 8453, 42161]) {
      for (let i = 0; i < 20; i++) {
        const config = {
          payer: someAddress(),
          payerAuthorizer: someAddress(),
          receiver: someAddress(),
          receiverAuthorizer: someAddress(),
          token: someAddress(),
          withdrawDelay: 900 + i * 3600,
          salt: (i % 2 === 0 ? `0x${"0".repeat(64)}` : randomBytes32()) as Hex,
        };
        const expected = hashTypedData({
          domain: settlementDomain(chainId),
          types: CHANNEL_CONFIG_TYPES,
          primaryType: "ChannelConfig",
          message: config,
        });
        expect(channelIdOf(config, chainId)).toBe(expected);
        expect(channelIdOf(config, chainId)).toBe(expected);
        expect(computeChannelId(config, `eip155:${chainId}`)).toBe(expected);
        // The largest uint128 too: the words are written by hand now.
        const amount = i === 19 ? 2n ** 128n - 1n : BigInt(i) * 10n ** 18n + 7n;
        expect(voucherDigest(chainId, expected, amount)).toBe(
          hashTypedData({
            domain: settlementDomain(chainId),
            types: VOUCHER_TYPES,
            primaryType: "Voucher",
            message: { channelId: expected, maxClaimableAmount: amount },
          }),
        );
      }
    }
  });
});
