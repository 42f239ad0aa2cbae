/**
 * The EIP-712 digests a voucher's verify needs, without recomputing what never changes: the
 * settlement domain's separator (once per chain, as the EIP-3009 path keeps a token's) and the type
 * hashes are made once, and a channel's id is remembered for its configuration. They are the
 * digests viem's hashTypedData makes (test/batch-digests.test.ts); this is a voucher's hot path.
 */
import { encodeAbiParameters, type Hex, keccak256, stringToHex } from "viem";
import { setNewest } from "../../core/newest.js";
import {
  bytesOfHex,
  hashWords,
  typedDigestOf,
  writeBytes32,
  writeUint,
} from "../chain/abi-words.js";
import { domainSeparatorOf } from "../exact/eip3009-encoding.js";
import { CHANNEL_CONFIG_TYPES, settlementDomain, VOUCHER_TYPES } from "./constants.js";
import type { ChannelConfig } from "./payload.js";

/** A struct's type hash, from the same field list its typed data uses (no nested types here). */
const typeHashOf = (name: string, fields: readonly { name: string; type: string }[]) =>
  keccak256(stringToHex(`${name}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`));

const CHANNEL_CONFIG_TYPEHASH = typeHashOf("ChannelConfig", CHANNEL_CONFIG_TYPES.ChannelConfig);
const VOUCHER_TYPEHASH = typeHashOf("Voucher", VOUCHER_TYPES.Voucher);

const typedDigest = (chainId: number, structHash: Hex) =>
  typedDigestOf(domainSeparatorOf(settlementDomain(chainId)), bytesOfHex(structHash));

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
  setNewest(channelIds, key, id, CHANNEL_IDS_KEPT);
  return id;
}

/**
 * What the payer signs for a voucher: the channel may pay out `maxClaimable` in all. Every voucher
 * verify computes it: its words are written straight into bytes and hashed with our keccak.
 */
export function voucherDigest(chainId: number, channelId: Hex, maxClaimable: bigint): Hex {
  const structHash = hashWords(3, (out) => {
    writeBytes32(out, 0, VOUCHER_TYPEHASH);
    writeBytes32(out, 32, channelId);
    writeUint(out, 64, maxClaimable, 128);
  });
  return typedDigestOf(domainSeparatorOf(settlementDomain(chainId)), structHash);
}
