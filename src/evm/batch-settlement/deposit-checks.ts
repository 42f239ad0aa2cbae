/** A deposit's own authorization, in the official order: EIP-3009 to its collector, or Permit2. */
import {
  type Address,
  encodeAbiParameters,
  erc20Abi,
  type Hex,
  hashTypedData,
  isAddressEqual,
  isErc6492Signature,
  keccak256,
  parseAbiParameters,
  parseErc6492Signature,
} from "viem";
import type { Failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { EvmContext } from "../context.js";
import { chainFailure, DEADLINE_HEADROOM_SECONDS } from "../exact/checks.js";
import {
  carriesErc20Approval,
  erc20ApprovalSponsoring,
  type SponsoredApproval,
} from "../exact/erc20-approval.js";
import { type Eip2612Permit, PERMIT2_ADDRESS, splitSignature } from "../exact/permit2-encoding.js";
import { eip2612Sponsoring } from "../exact/permit2-extensions.js";
import { checkSignature, type Deployment, innerSignature } from "../exact/signature.js";
import {
  DEPOSIT_WITNESS_TYPES,
  ERC3009_COLLECTOR_ADDRESS,
  PERMIT2_COLLECTOR_ADDRESS,
  RECEIVE_AUTHORIZATION_TYPES,
} from "./constants.js";
import type { DepositPayload } from "./payload.js";
import { type Reason, rejected } from "./reasons.js";

type Erc3009 = NonNullable<DepositPayload["deposit"]["authorization"]["erc3009Authorization"]>;
type Permit2 = NonNullable<DepositPayload["deposit"]["authorization"]["permit2Authorization"]>;

/** The EIP-3009 nonce a deposit signs: the channel and the payer's salt, so it opens no other. */
export function erc3009DepositNonce(channelId: Hex, salt: Hex): Hex {
  return keccak256(
    encodeAbiParameters(parseAbiParameters("bytes32, uint256"), [channelId, BigInt(salt)]),
  );
}

export function erc3009CollectorData(auth: Erc3009): Hex {
  return encodeAbiParameters(parseAbiParameters("uint256, uint256, uint256, bytes"), [
    auth.validAfter,
    auth.validBefore,
    BigInt(auth.salt),
    innerSignature(auth.signature),
  ]);
}

export function permit2CollectorData(auth: Permit2, permit2612?: Eip2612Permit): Hex {
  return encodeAbiParameters(parseAbiParameters("uint256, uint256, bytes, bytes"), [
    auth.nonce,
    auth.deadline,
    innerSignature(auth.signature),
    permitData(permit2612),
  ]);
}

/** The payer's EIP-2612 permit of Permit2 as the collector takes it: (value, deadline, v, r, s). */
function permitData(permit?: Eip2612Permit): Hex {
  if (!permit) return "0x";
  const { r, s, v } = splitSignature(permit.signature);
  const words = parseAbiParameters("uint256, uint256, uint8, bytes32, bytes32");
  return encodeAbiParameters(words, [permit.value, permit.deadline, v, r, s]);
}

/** How Permit2 may move a deposit: approved, the payer's EIP-2612 permit or signed approval. */
export type Permit2Allowance = Deploying &
  (
    | { readonly kind: "approved" }
    | { readonly kind: "eip2612"; readonly permit: Eip2612Permit }
    | { readonly kind: "erc20Approval"; readonly approval: SponsoredApproval }
  );

/** The payer's signature over `digest`: its wallet to deploy (ERC-6492), or the refusal. */
async function payerSignature(
  ctx: EvmContext,
  payer: Address,
  digest: Hex,
  signature: Hex,
  refusal: { readonly reason: Reason; readonly what: string },
): Promise<Failure | Deploying> {
  const code = ctx.client.getCode({ address: payer });
  const signed = await checkSignature(ctx, payer, digest, signature, code);
  if (signed.ok) return { deployment: signed.value.deployment };
  const { message } = signed.failure;
  if (signed.failure.code === "chain_unavailable") return signed.failure;
  if (signed.failure.code === "unsupported_signature") {
    return rejected("eip6492_factory_not_allowed", message);
  }
  return rejected(refusal.reason, `${refusal.what} ${message.replace(/^the signature /, "")}`);
}

/** Whether the payer's signed ReceiveWithAuthorization funds this deposit. */
export async function checkErc3009(
  ctx: EvmContext,
  payload: DepositPayload,
  auth: Erc3009,
  token: { readonly address: Address; readonly name: string; readonly version: string },
): Promise<Failure | Deploying> {
  const now = BigInt(Math.floor(ctx.now()));
  if (auth.validBefore < now + DEADLINE_HEADROOM_SECONDS) {
    return rejected(
      "payload_authorization_valid_before",
      `the deposit authorization expires at ${auth.validBefore}, too soon to settle (now ${now})`,
    );
  }
  if (auth.validAfter > now) {
    return rejected(
      "payload_authorization_valid_after",
      `the deposit authorization is valid only after ${auth.validAfter} (now ${now})`,
    );
  }
  const payer = payload.channelConfig.payer;
  const digest = hashTypedData({
    domain: {
      name: token.name,
      version: token.version,
      chainId: ctx.chainId,
      verifyingContract: token.address,
    },
    types: RECEIVE_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: payer,
      to: ERC3009_COLLECTOR_ADDRESS,
      value: payload.deposit.amount,
      validAfter: auth.validAfter,
      validBefore: auth.validBefore,
      nonce: erc3009DepositNonce(payload.voucher.channelId as Hex, auth.salt),
    },
  });
  const signed = await payerSignature(ctx, payer, digest, auth.signature, {
    reason: "receive_authorization_signature",
    what: "the deposit's ReceiveWithAuthorization",
  });
  // An allowed ERC-6492 factory that refuses its call is the reason, whatever the signature's.
  if ("code" in signed) return (await cannotDeploy(ctx, auth.signature)) ?? signed;
  return signed;
}

/** A deposit's signature checked: the payer's wallet to deploy first, if not yet (ERC-6492). */
type Deploying = { readonly deployment?: Deployment | undefined };

/** Whether the payer's Permit2 transfer funds this deposit, and Permit2 may move it. */
export async function checkPermit2(
  ctx: EvmContext,
  request: PaymentRequest,
  payload: DepositPayload,
  auth: Permit2,
  asset: Address,
): Promise<Failure | Permit2Allowance> {
  const payer = payload.channelConfig.payer;
  if (!isAddressEqual(auth.from, payer)) {
    return rejected(
      "permit2_invalid_signature",
      `the Permit2 authorization is from ${auth.from}, not the channel's payer ${payer}`,
    );
  }
  if (!isAddressEqual(auth.spender, PERMIT2_COLLECTOR_ADDRESS)) {
    return rejected(
      "permit2_invalid_spender",
      `the Permit2 spender must be the deposit collector ${PERMIT2_COLLECTOR_ADDRESS}, not ${auth.spender}`,
    );
  }
  if (!isAddressEqual(auth.permitted.token, asset)) {
    return rejected(
      "token_mismatch",
      `the Permit2 authorization moves ${auth.permitted.token}, not requirements.asset ${asset}`,
      "asset_mismatch",
    );
  }
  if (auth.permitted.amount !== payload.deposit.amount) {
    return rejected(
      "permit2_amount_mismatch",
      `the Permit2 authorization is for ${auth.permitted.amount}, the deposit for ${payload.deposit.amount}`,
    );
  }
  if (auth.witness.channelId.toLowerCase() !== payload.voucher.channelId.toLowerCase()) {
    return rejected(
      "channel_id_mismatch",
      `the Permit2 witness names channel ${auth.witness.channelId}, not ${payload.voucher.channelId}`,
    );
  }
  const now = BigInt(Math.floor(ctx.now()));
  if (auth.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    return rejected(
      "permit2_deadline_expired",
      `the Permit2 deadline ${auth.deadline} is too soon to settle (now ${now})`,
    );
  }
  const digest = hashTypedData({
    domain: { name: "Permit2", chainId: ctx.chainId, verifyingContract: PERMIT2_ADDRESS },
    types: DEPOSIT_WITNESS_TYPES,
    primaryType: "PermitWitnessTransferFrom",
    message: {
      permitted: auth.permitted,
      spender: auth.spender,
      nonce: auth.nonce,
      deadline: auth.deadline,
      witness: { channelId: auth.witness.channelId as Hex },
    },
  });
  const signed = await payerSignature(ctx, payer, digest, auth.signature, {
    reason: "permit2_invalid_signature",
    what: "the Permit2 authorization",
  });
  if ("code" in signed) return signed;
  const { deployment } = signed;
  // The gas-sponsoring extensions, as the official facilitator takes them, in its order.
  const sponsoring = eip2612Sponsoring(request, { from: payer }, asset, ctx);
  if (sponsoring) {
    if (!sponsoring.ok) return sponsoring.failure;
    if (sponsoring.value.value !== payload.deposit.amount) {
      return rejected(
        "eip2612_amount_mismatch",
        `eip2612GasSponsoring: the permit is for ${sponsoring.value.value}, the deposit for ${payload.deposit.amount}`,
      );
    }
    return { kind: "eip2612", permit: sponsoring.value, deployment };
  }
  if (carriesErc20Approval(request)) {
    const approval = await erc20ApprovalSponsoring(ctx, request, payer, asset);
    if (approval && !approval.ok) return approval.failure;
    if (approval) return { kind: "erc20Approval", approval: approval.value, deployment };
  }
  try {
    const allowance = await ctx.client.readContract({
      address: asset,
      abi: erc20Abi,
      functionName: "allowance",
      args: [payer, PERMIT2_ADDRESS],
    });
    if (allowance >= payload.deposit.amount) return { kind: "approved", deployment };
    return rejected(
      "permit2_allowance_required",
      `the payer allows Permit2 ${allowance} of ${asset}, less than the deposit of ${payload.deposit.amount}`,
    );
  } catch (error) {
    return chainFailure(error, "reading the payer's Permit2 allowance");
  }
}

/** An allowed ERC-6492 factory that refuses its call: `smart_wallet_deployment_failed`. */
async function cannotDeploy(ctx: EvmContext, signature: Hex): Promise<Failure | undefined> {
  if (!isErc6492Signature(signature)) return undefined;
  const { address: factory, data } = parseErc6492Signature(signature);
  if (!factory || !ctx.erc6492Factories.some((allowed) => isAddressEqual(allowed, factory))) {
    return undefined;
  }
  const deploys = await ctx.client.call({ to: factory, data }).then(
    () => true,
    () => false,
  );
  if (deploys) return undefined;
  return rejected(
    "smart_wallet_deployment_failed",
    `the payer's wallet cannot be deployed: its factory ${factory} refuses the call`,
  );
}
