/**
 * The EIP-712 digests a voucher's verify needs, without recomputing what never changes: the
 * settlement domain's separator (one per chain) and the type hashes are made once, and a
 * channel's id is remembered for its configuration. They are the digests viem's hashTypedData
 * makes (test/batch-contract.test.ts holds them to the SDK's); this is the hot path of a voucher.
 */
import { concat, encodeAbiParameters, type Hex, hashDomain, keccak256, stringToHex } from "viem";
import { settlementDomain } from "./constants.js";
import type { ChannelConfig } from "./payload.js";

const DOMAIN_TYPES = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
] as const;

const CHANNEL_CONFIG_TYPEHASH = keccak256(
  stringToHex(
    "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)",
  ),
);
const VOUCHER_TYPEHASH = keccak256(
  stringToHex("Voucher(bytes32 channelId,uint128 maxClaimableAmount)"),
);

const separators = new Map<number, Hex>();

/** The settlement contract's EIP-712 domain separator on `chainId`. */
export function settlementSeparator(chainId: number): Hex {
  let separator = separators.get(chainId);
  if (!separator) {
    separator = hashDomain({
      domain: { ...settlementDomain(chainId), chainId: BigInt(chainId) },
      types: { EIP712Domain: DOMAIN_TYPES },
    });
    separators.set(chainId, separator);
  }
  return separator;
}

const typedDigest = (chainId: number, structHash: Hex) =>
  keccak256(concat(["0x1901", settlementSeparator(chainId), structHash]));

/** Channel ids by chain and configuration, the most recently used kept. */
const channelIds = new Map<string, Hex>();
const CHANNEL_IDS_KEPT = 50_000;

/** A channel's id: the EIP-712 hash of its configuration on `chainId`. */
export function channelIdOf(config: ChannelConfig, chainId: number): Hex {
  const key = `${chainId}:${config.payer}:${config.payerAuthorizer}:${config.receiver}:${config.receiverAuthorizer}:${config.token}:${config.withdrawDelay}:${config.salt}`;
  const known = channelIds.get(key);
  if (known) return known;
  const id = typedDigest(
    chainId,
    keccak256(
      encodeAbiParameters(
        [
          { type: "bytes32" },
          { type: "address" },
          { type: "address" },
          { type: "address" },
          { type: "address" },
          { type: "address" },
          { type: "uint40" },
          { type: "bytes32" },
        ],
        [
          CHANNEL_CONFIG_TYPEHASH,
          config.payer,
          config.payerAuthorizer,
          config.receiver,
          config.receiverAuthorizer,
          config.token,
          config.withdrawDelay,
          config.salt,
        ],
      ),
    ),
  );
  channelIds.set(key, id);
  if (channelIds.size > CHANNEL_IDS_KEPT) {
    const oldest = channelIds.keys().next().value;
    if (oldest !== undefined) channelIds.delete(oldest);
  }
  return id;
}

/** What the payer signs for a voucher: the channel may pay out `maxClaimable` in all. */
export function voucherDigest(chainId: number, channelId: Hex, maxClaimable: bigint): Hex {
  return typedDigest(
    chainId,
    keccak256(
      encodeAbiParameters(
        [{ type: "bytes32" }, { type: "bytes32" }, { type: "uint128" }],
        [VOUCHER_TYPEHASH, channelId, maxClaimable],
      ),
    ),
  );
}
