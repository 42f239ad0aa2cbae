/** `pay` for batch-settlement: a deposit with the voucher when the channel runs short, else one. */
import { type Address, erc20Abi, getAddress, isAddress, type PublicClient } from "viem";
import { channelIdOf } from "../../../evm/batch-settlement/channel.js";
import {
  MIN_WITHDRAW_DELAY,
  PERMIT2_COLLECTOR_ADDRESS,
} from "../../../evm/batch-settlement/constants.js";
import {
  batchChannelConfig,
  batchPaymentPayload,
  signBatchDeposit,
  signBatchVoucherPayload,
} from "../../../evm/client/sign-batch.js";
import type { RequirementsJson, TransferMethod } from "../../../evm/client/sign-payment.js";
import { type DevAccount, receiverAuthorizerAccount } from "../../../evm/devnet/accounts.js";
import { PERMIT2_ADDRESS } from "../../../evm/exact/permit2-encoding.js";
import { type TokenUnits, tokenAmount } from "../../../protocol/amounts.js";
import { UsageError } from "../../io/errors.js";
import { warn } from "../../io/output.js";
import { settlementReads } from "./pay-channel.js";

interface BatchPayment {
  readonly chainId: number;
  readonly requirements: RequirementsJson;
  readonly payer: DevAccount;
  readonly amount: bigint;
  readonly method: TransferMethod;
  readonly deposit?: bigint | undefined;
  readonly cumulative?: bigint | undefined;
  readonly quiet: boolean;
  /** The token's decimals and symbol, for the summary line ("0.05 USDC (50000 units)"). */
  readonly token?: TokenUnits | undefined;
}

/** The requirements' receiver authorizer, else the devnet's; a chain with neither cannot pay. */
export function batchExtra(
  extra: Record<string, unknown>,
  devnet: boolean,
  flag: string | undefined,
): Record<string, unknown> {
  const given = flag ?? extra.receiverAuthorizer;
  if (given !== undefined && (typeof given !== "string" || !isAddress(given, { strict: false }))) {
    throw new UsageError("--receiver-authorizer is not an address");
  }
  const receiverAuthorizer =
    typeof given === "string"
      ? getAddress(given)
      : devnet
        ? receiverAuthorizerAccount.address
        : undefined;
  if (!receiverAuthorizer) {
    throw new UsageError(
      "batch-settlement needs the seller's receiver authorizer: --receiver-authorizer ADDRESS, or --requirements with extra.receiverAuthorizer (a facilitator's /supported may advertise one)",
    );
  }
  return {
    ...extra,
    receiverAuthorizer,
    withdrawDelay:
      typeof extra.withdrawDelay === "number" ? extra.withdrawDelay : MIN_WITHDRAW_DELAY,
  };
}

/** Signs the deposit or voucher the channel needs now; returns the payload and what it did. */
export async function signBatchPayment(client: PublicClient, payment: BatchPayment) {
  const { chainId, requirements, payer, amount, method } = payment;
  const say = (units: bigint) => tokenAmount(units, payment.token);
  const channelId = channelIdOf(batchChannelConfig(payer.address, requirements), chainId);
  const [balance, totalClaimed] = await settlementReads(client).channels([channelId]);
  const cumulative = payment.cumulative ?? totalClaimed + amount;
  if (cumulative <= totalClaimed) {
    throw new UsageError(
      `--cumulative must be more than the ${totalClaimed} the channel has paid out already`,
    );
  }
  const deposit =
    payment.deposit ??
    (balance === 0n || cumulative > balance ? maxOf(5n * amount, cumulative - balance) : undefined);
  if (deposit === undefined) {
    const payload = await signBatchVoucherPayload(payer, chainId, requirements, cumulative);
    return {
      payload: batchPaymentPayload(requirements, payload),
      summary: `a voucher for ${say(cumulative)} cumulative on channel ${channelId} (holds ${say(balance)}, ${say(totalClaimed)} paid out)`,
    };
  }
  if (method === "permit2")
    await warnIfNotApproved(client, payer.address, requirements, deposit, payment.quiet);
  const payload = await signBatchDeposit(payer, {
    chainId,
    requirements,
    deposit,
    maxClaimable: cumulative,
    method,
    held: balance,
  }).catch((error: Error) => {
    throw new UsageError(error.message);
  });
  return {
    payload: batchPaymentPayload(requirements, payload),
    summary: `a deposit of ${say(deposit)} (${method}) into channel ${channelId} with a voucher for ${say(cumulative)} cumulative`,
  };
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);

export const permit2Allowance = (client: PublicClient, asset: Address, owner: Address) =>
  client.readContract({
    address: asset,
    abi: erc20Abi,
    functionName: "allowance",
    args: [owner, PERMIT2_ADDRESS],
  });

/** A Permit2 deposit moves tokens through Permit2: the payer must have approved it. */
async function warnIfNotApproved(
  client: PublicClient,
  payer: Address,
  requirements: RequirementsJson,
  deposit: bigint,
  quiet: boolean,
) {
  const allowance = await permit2Allowance(client, getAddress(requirements.asset), payer);
  if (allowance < deposit && !quiet) {
    warn(
      `the payer ${payer} allows Permit2 ${allowance}, less than the deposit: the deposit is refused (permit2_allowance_required) until it approves Permit2 (the collector ${PERMIT2_COLLECTOR_ADDRESS} takes it from there)`,
    );
  }
}
