/** An x402 buyer's batch-settlement channel, deposit and vouchers, in the official shapes. */
import {
  createBatchSettlementEIP3009DepositPayload,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { type Address, getAddress, isAddressEqual, zeroAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEFAULT_RESOURCE, type RequirementsJson } from "../../protocol/client-request.js";
import { channelIdOf } from "../batch-settlement/channel.js";
import {
  DEPOSIT_WITNESS_TYPES,
  MIN_WITHDRAW_DELAY,
  PERMIT2_COLLECTOR_ADDRESS,
} from "../batch-settlement/constants.js";
import type { ChannelConfig } from "../batch-settlement/payload.js";
import type { DevAccount } from "../devnet/accounts.js";
import { randomPermit2Nonce } from "../devnet/sign-permit2.js";
import { PERMIT2_ADDRESS } from "../exact/permit2-encoding.js";
import type { TransferMethod } from "./sign-payment.js";

/** The requirements' receiver authorizer: required, and never the zero address. */
function receiverAuthorizerIn(requirements: RequirementsJson): Address {
  const value = requirements.extra?.receiverAuthorizer;
  if (
    typeof value !== "string" ||
    !/^0x[0-9a-fA-F]{40}$/.test(value) ||
    isAddressEqual(value as Address, zeroAddress)
  ) {
    throw new Error(
      "batch-settlement requirements must carry a non-zero extra.receiverAuthorizer (the facilitator's /supported advertises one)",
    );
  }
  return getAddress(value);
}

/** The channel a payer opens for these requirements (salt 0: one per payer, seller and token). */
export function batchChannelConfig(payer: Address, requirements: RequirementsJson): ChannelConfig {
  const withdrawDelay = requirements.extra?.withdrawDelay;
  return {
    payer: getAddress(payer),
    payerAuthorizer: getAddress(payer),
    receiver: getAddress(requirements.payTo),
    receiverAuthorizer: receiverAuthorizerIn(requirements),
    token: getAddress(requirements.asset),
    withdrawDelay: typeof withdrawDelay === "number" ? withdrawDelay : MIN_WITHDRAW_DELAY,
    salt: `0x${"0".repeat(64)}`,
  };
}

interface BatchDepositOptions {
  readonly chainId: number;
  readonly requirements: RequirementsJson;
  /** What goes into the channel, in atomic units. */
  readonly deposit: bigint;
  /** The first voucher's cumulative amount (default: the requirements' amount). */
  readonly maxClaimable?: bigint;
  readonly method: TransferMethod;
  /** What the channel holds already: the first voucher may count it (default 0). */
  readonly held?: bigint;
  /** Seconds the deposit's authorization stays valid (default: maxTimeoutSeconds, else 300). */
  readonly validForSeconds?: number;
}

/** The `deposit` payload: the channel, its first voucher, and the payer's signed transfer. */
export async function signBatchDeposit(payer: DevAccount, options: BatchDepositOptions) {
  const { chainId, requirements, deposit } = options;
  const maxClaimable = options.maxClaimable ?? BigInt(String(requirements.amount ?? "0"));
  // First: a bad receiver authorizer is the error to report before an uncovered voucher.
  const channelConfig = batchChannelConfig(payer.address, requirements);
  const covered = deposit + (options.held ?? 0n);
  if (maxClaimable > covered) {
    throw new Error(
      `the voucher (${maxClaimable}) is more than the channel would hold (${covered})`,
    );
  }
  const validFor = options.validForSeconds ?? requirements.maxTimeoutSeconds ?? 300;
  const account = privateKeyToAccount(payer.privateKey);
  if (options.method === "eip3009") {
    const signed = await createBatchSettlementEIP3009DepositPayload(
      account,
      2,
      { ...requirements, network: `eip155:${chainId}`, maxTimeoutSeconds: validFor } as never,
      channelConfig,
      deposit.toString(),
      maxClaimable.toString(),
    );
    return signed.payload;
  }
  // The official client signs a Permit2 deposit only inside its stateful scheme: signed here.
  const { voucher } = await signBatchVoucherPayload(payer, chainId, requirements, maxClaimable);
  const token = getAddress(requirements.asset);
  const nonce = randomPermit2Nonce();
  const deadline = BigInt(Math.floor(Date.now() / 1000) + validFor);
  const witness = { channelId: voucher.channelId };
  const signature = await account.signTypedData({
    domain: { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS },
    types: DEPOSIT_WITNESS_TYPES,
    primaryType: "PermitWitnessTransferFrom",
    message: {
      permitted: { token, amount: deposit },
      spender: PERMIT2_COLLECTOR_ADDRESS,
      nonce,
      deadline,
      witness,
    },
  });
  const permit2Authorization = {
    from: account.address,
    permitted: { token, amount: deposit.toString() },
    spender: PERMIT2_COLLECTOR_ADDRESS,
    nonce: nonce.toString(),
    deadline: deadline.toString(),
    witness,
    signature,
  };
  return {
    type: "deposit" as const,
    channelConfig,
    voucher,
    deposit: { amount: deposit.toString(), authorization: { permit2Authorization } },
  };
}

/** A `voucher` payload: the payer's channel may pay out up to `maxClaimable`, in all. */
export async function signBatchVoucherPayload(
  payer: DevAccount,
  chainId: number,
  requirements: RequirementsJson,
  maxClaimable: bigint,
) {
  const channelConfig = batchChannelConfig(payer.address, requirements);
  const channelId = channelIdOf(channelConfig, chainId);
  const account = privateKeyToAccount(payer.privateKey);
  const voucher = await signVoucher(
    account,
    channelId,
    maxClaimable.toString(),
    `eip155:${chainId}`,
  );
  return { type: "voucher" as const, channelConfig, voucher };
}

/** The x402 v2 PaymentPayload around a batch-settlement payload. */
export function batchPaymentPayload(
  requirements: RequirementsJson,
  payload: unknown,
  resource: { url: string; description?: string; mimeType?: string } = DEFAULT_RESOURCE,
) {
  return { x402Version: 2 as const, resource, accepted: requirements, payload };
}
