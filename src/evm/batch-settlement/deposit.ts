/** A deposit into a channel through a collector, with a voucher: settled by the exact pipeline. */
import { type Address, erc20Abi, type Hex } from "viem";
import { tokenAmount } from "../../protocol/amounts.js";
import type { Failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { firstLine } from "../../protocol/words.js";
import type { EvmContext } from "../context.js";
import { chainFailure, refuse, type Step, simulateWithin, unitsOf } from "../exact/checks.js";
import { approvalPreludes } from "../exact/erc20-approval.js";
import type { ExactMethod, Verified } from "../exact/method.js";
import {
  type Eip2612Permit,
  PERMIT2_ADDRESS,
  permit2SettlementKey,
} from "../exact/permit2-encoding.js";
import { parseEvmRequirements } from "../exact/requirements.js";
import { type Deployment, withDeployment } from "../exact/signature.js";
import { channelMismatch, readChannel } from "./channel.js";
import {
  ERC3009_COLLECTOR_ADDRESS,
  PERMIT2_COLLECTOR_ADDRESS,
  SETTLEMENT_ADDRESS,
  settlementCall,
} from "./constants.js";
import {
  checkErc3009,
  checkPermit2,
  erc3009CollectorData,
  erc3009DepositNonce,
  type Permit2Allowance,
  permit2CollectorData,
} from "./deposit-checks.js";
import { type DepositPayload, depositSchema, parsePayload } from "./payload.js";
import { rejected, wouldRevert } from "./reasons.js";
import { BATCH_GAS } from "./settings.js";
import { bookOf, checkVoucherSignature, voucherAgainst } from "./voucher.js";

interface Deposit {
  readonly payload: DepositPayload;
  readonly asset: Address;
  readonly via: "eip3009" | "permit2";
  readonly channelId: Hex;
}

function depositCall(deposit: Deposit, permit2612?: Eip2612Permit) {
  const { payload, via } = deposit;
  const auth = payload.deposit.authorization;
  const collector = via === "eip3009" ? ERC3009_COLLECTOR_ADDRESS : PERMIT2_COLLECTOR_ADDRESS;
  const data =
    via === "eip3009" && auth.erc3009Authorization
      ? erc3009CollectorData(auth.erc3009Authorization)
      : auth.permit2Authorization
        ? permit2CollectorData(auth.permit2Authorization, permit2612)
        : "0x";
  const args = [payload.channelConfig, payload.deposit.amount, collector, data] as const;
  return settlementCall("deposit", args);
}

function parse(ctx: EvmContext, request: PaymentRequest): Step<Deposit> {
  const parsed = parsePayload(request, depositSchema, "deposit");
  if (!parsed.ok) return parsed;
  const requirements = parseEvmRequirements(request);
  if (!requirements.ok) return requirements;
  const payload = parsed.value;
  // The channel first, then the transfer method: the official facilitator's order.
  const mismatch = channelMismatch(payload, request.requirements, ctx.chainId);
  if (mismatch) return refuse(mismatch);
  const extra = request.requirements.extra ?? {};
  const hinted = extra.assetTransferMethod;
  const auth = payload.deposit.authorization;
  const via =
    hinted === "permit2" || (!hinted && auth.permit2Authorization) ? "permit2" : "eip3009";
  if (via === "permit2" && !auth.permit2Authorization) {
    const why =
      "requirements.extra.assetTransferMethod is permit2, and the deposit carries no permit2Authorization";
    return refuse(rejected("payload_type", why));
  }
  const channelId = payload.voucher.channelId.toLowerCase() as Hex;
  return { ok: true, value: { payload, asset: requirements.value.asset, via, channelId } };
}

/** The deposit's own authorization checked: how Permit2 may move it, and a wallet to deploy. */
async function checkAuthorization(
  ctx: EvmContext,
  request: PaymentRequest,
  deposit: Deposit,
): Promise<Failure | { deployment?: Deployment | undefined; allowance?: Permit2Allowance }> {
  const { payload, asset } = deposit;
  const auth = payload.deposit.authorization;
  if (deposit.via === "permit2") {
    if (!auth.permit2Authorization) return {};
    const checked = await checkPermit2(ctx, request, payload, auth.permit2Authorization, asset);
    return "kind" in checked ? { allowance: checked, deployment: checked.deployment } : checked;
  }
  if (!auth.erc3009Authorization) {
    return rejected(
      "erc3009_authorization_required",
      "the deposit carries no erc3009Authorization",
    );
  }
  const { name, version } = request.requirements.extra ?? {};
  if (typeof name !== "string" || typeof version !== "string") {
    return rejected(
      "missing_eip712_domain",
      "requirements.extra.name and .version are required: the token's EIP-712 domain",
    );
  }
  return checkErc3009(ctx, payload, auth.erc3009Authorization, { address: asset, name, version });
}

async function verify(
  ctx: EvmContext,
  request: PaymentRequest,
  deposit: Deposit,
): Promise<Step<Verified<Deposit>>> {
  const { payload, asset, via, channelId } = deposit;
  const payer = payload.channelConfig.payer;
  // An undeployed wallet (ERC-6492, its factory allowed) is deployed in the deposit's transaction.
  const checked = await checkAuthorization(ctx, request, deposit);
  if ("code" in checked) return refuse(checked);
  const { deployment, allowance } = checked;
  const badVoucher = await checkVoucherSignature(ctx, payload.channelConfig, payload.voucher);
  if (badVoucher) return refuse(badVoucher);
  const amount = payload.deposit.amount;
  const reads = await Promise.all([
    readChannel(ctx, channelId),
    ctx.client.readContract({
      address: asset,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [payer],
    }),
  ]).catch((error: unknown) => chainFailure(error, "reading the channel and the payer's balance"));
  if ("code" in reads) return refuse(reads);
  const [state, balance] = reads;
  // What a verify answers in `extra`, and what the next voucher is checked against.
  bookOf(ctx).remember(channelId, state);
  if (balance < amount) {
    // A refusal only: the token's decimals are read (once per token) for its words.
    const token = await unitsOf(ctx, asset);
    const why = `the payer holds ${tokenAmount(balance, token)} of ${asset}, less than the deposit of ${tokenAmount(amount, token)}`;
    return refuse(rejected("insufficient_balance", why));
  }
  const voucher = payload.voucher.maxClaimableAmount;
  const wrong = voucherAgainst(state, channelId, voucher, { deposit: amount });
  if (wrong) return refuse(wrong);
  const call = withDeployment(
    depositCall(deposit, allowance?.kind === "eip2612" ? allowance.permit : undefined),
    deployment,
  );
  const spend = { token: asset, owner: payer, amount };
  const expect = {
    token: asset,
    from: payer,
    // EIP-3009 pays the collector, which passes it on; Permit2 pays the contract directly.
    to: via === "eip3009" ? ERC3009_COLLECTOR_ADDRESS : SETTLEMENT_ADDRESS,
    value: amount.toString(),
  };
  const deploys = deployment !== undefined;
  const gas = { use: BATCH_GAS.deposit, asset, contractWallet: deploys, deployment: deploys };
  const verified = { payment: deposit, call, gas, expect } as const;
  if (allowance?.kind === "erc20Approval") {
    // The payer's approval lands first (with the gas it lacks): the deposit is simulated then.
    const preludes = approvalPreludes(allowance.approval, asset, amount);
    return { ok: true, value: { ...verified, spends: [spend], preludes } };
  }
  const simulated = await simulateWithin(
    ctx,
    { ...call, account: ctx.signers.addresses[0] },
    { use: BATCH_GAS.deposit, deployment: deploys },
  );
  if (!simulated.ok) return refuse(wouldRevert("deposit", firstLine(simulated.error)));
  // Spent from the payer's allowance for Permit2 too, unless its permit sets it in the deposit.
  const spends =
    allowance?.kind === "approved" ? [spend, { ...spend, spender: PERMIT2_ADDRESS }] : [spend];
  return { ok: true, value: { ...verified, spends } };
}

export const depositMethod: ExactMethod<Deposit> = {
  name: "batch-settlement deposit",
  accepts: (payload) => payload.type === "deposit",
  parse,
  identify(ctx, deposit) {
    const { payload, asset } = deposit;
    const payer = payload.channelConfig.payer;
    const auth = payload.deposit.authorization;
    // What the chain consumes: the token's EIP-3009 nonce, or the payer's Permit2 nonce.
    const key =
      deposit.via === "eip3009" && auth.erc3009Authorization
        ? `eip3009:${ctx.chainId}:${asset}:${payer}:${erc3009DepositNonce(deposit.channelId, auth.erc3009Authorization.salt)}`.toLowerCase()
        : permit2SettlementKey(ctx.chainId, payer, auth.permit2Authorization?.nonce ?? 0n);
    return { key, payer, asset };
  },
  verify,
  async sameAsJournal(_ctx, deposit, entry) {
    if (entry.expect?.value === deposit.payload.deposit.amount.toString()) return null;
    return rejected(
      "deposit_transaction_failed",
      `this deposit authorization is already being settled for another deposit (${entry.hashes.at(-1)}, ${SETTLEMENT_ADDRESS})`,
      "nonce_already_used",
    );
  },
  diagnose: async (_ctx, _deposit, revert) =>
    wouldRevert("deposit", revert, "deposit_transaction_failed"),
};
