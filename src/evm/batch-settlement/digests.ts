/** The EIP-712 digests of a voucher's verify (its hot path), as hashTypedData makes them. */
import { type Hex, keccak256, stringToHex } from "viem";
import { setNewest } from "../../core/newest.js";
import { hashStruct, typedDigestOf } from "../chain/abi-words.js";
import { domainSeparatorOf } from "../exact/eip3009-encoding.js";
import { CHANNEL_CONFIG_TYPES, settlementDomain, VOUCHER_TYPES } from "./constants.js";
import type { ChannelConfig } from "./payload.js";

/** A struct's type hash, from the same field list its typed data uses (no nested types here). */
const typeHashOf = (name: string, fields: readonly { name: string; type: string }[]) =>
  keccak256(stringToHex(`${name}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`));

const CHANNEL_CONFIG_TYPEHASH = typeHashOf("ChannelConfig", CHANNEL_CONFIG_TYPES.ChannelConfig);
const VOUCHER_TYPEHASH = typeHashOf("Voucher", VOUCHER_TYPES.Voucher);

const typedDigest = (chainId: number, structHash: Uint8Array) =>
  typedDigestOf(domainSeparatorOf(settlementDomain(chainId)), structHash);

/** Channel ids by chain and configuration, the most recently used kept. */
const channelIds = new Map<string, Hex>();

/** A channel's id: the EIP-712 hash of its configuration on `chainId`. */
export function channelIdOf(config: ChannelConfig, chainId: number): Hex {
  const { payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay } = config;
  const fields: (Hex | bigint)[] = [
    payer,
    payerAuthorizer,
    receiver,
    receiverAuthorizer,
    token,
    config.salt,
  ];
  const key = `${chainId}:${withdrawDelay}:${fields.join(":")}`;
  const known = channelIds.get(key);
  if (known) return known;
  fields.splice(5, 0, BigInt(withdrawDelay));
  const id = typedDigest(chainId, hashStruct(CHANNEL_CONFIG_TYPEHASH, fields));
  setNewest(channelIds, key, id, 50_000);
  return id;
}

/** What the payer signs for a voucher: the channel may pay out `maxClaimable` in all. */
export function voucherDigest(chainId: number, channelId: Hex, maxClaimable: bigint): Hex {
  return typedDigest(chainId, hashStruct(VOUCHER_TYPEHASH, [channelId, maxClaimable]));
}
