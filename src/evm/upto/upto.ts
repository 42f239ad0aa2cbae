/**
 * The `upto` scheme on EVM (x402 v2): the payer signs a Permit2 authorization for a maximum,
 * through the x402 upto proxy, whose witness names the one facilitator that may settle it; the
 * resource server settles what was used (`requirements.amount` at settle, at most the maximum;
 * zero moves nothing). Checks run in the reference SDK's order with its reason strings; the
 * settlement goes through the same pipeline as every exact method.
 */
import { type Hex, isErc6492Signature } from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import * as z from "../../protocol/zod.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { EvmTransfer } from "../chain/entry.js";
import { revertData, revertReason } from "../chain/revert.js";
import type { EvmContext } from "../context.js";
import {
  assetFailure,
  assetIsContract,
  chainFailure,
  outcomeOf,
  overBoundInSimulation,
  type Step,
  schemeAndNetwork,
  simulateWithin,
} from "../exact/checks.js";
import {
  approvalPreludes,
  carriesErc20Approval,
  erc20ApprovalSponsoring,
} from "../exact/erc20-approval.js";
import { address, signatureBytes, uint256 } from "../exact/fields.js";
import type { ExactMethod, Verified } from "../exact/method.js";
import {
  checkPermit2Terms,
  diagnose,
  parsePermit2,
  permit2Identity,
  prerequisiteFailure,
  sameAsJournaled,
} from "../exact/permit2-checks.js";
import { customErrorName, type Eip2612Permit, PERMIT2_ADDRESS } from "../exact/permit2-encoding.js";
import { eip2612Sponsoring } from "../exact/permit2-extensions.js";
import type { EvmRequirements } from "../exact/requirements.js";
import { checkSignature, innerSignature } from "../exact/signature.js";
import {
  UPTO_PERMIT2_PROXY_ADDRESS,
  type UptoAuthorization,
  uptoDigest,
  uptoProxyAbi,
  uptoSettleCalldata,
} from "./encoding.js";

export const UPTO = "upto";

const payloadSchema = z.object({
  signature: signatureBytes,
  permit2Authorization: z.object({
    from: address,
    permitted: z.object({ token: address, amount: uint256 }),
    spender: address,
    nonce: uint256,
    deadline: uint256,
    witness: z.object({ to: address, facilitator: address, validAfter: uint256 }),
  }),
});

interface UptoPayment {
  readonly authorization: UptoAuthorization;
  readonly signature: Hex;
  /** `amount` is the maximum at verify, what to settle at settle. */
  readonly requirements: EvmRequirements;
  readonly permit2612?: Eip2612Permit | undefined;
}

const refuse = (f: Failure): { ok: false; failure: Failure } => ({ ok: false, failure: f });

/** The checks that need no chain, in the reference's order: exact's but for the witness and amount. */
function checkTerms(ctx: EvmContext, payment: UptoPayment, settling: boolean): Failure | null {
  const { authorization: auth, requirements } = payment;
  return checkPermit2Terms(ctx, auth, requirements, {
    proxy: UPTO_PERMIT2_PROXY_ADDRESS,
    scheme: "upto",
    subject: "the upto authorization",
    assetSubject: "the authorization",
    // Without settlement keys (verify from the CLI) whose authorization it is cannot be told.
    witness: () =>
      ctx.signers.size > 0 && !ctx.signers.byAddress(auth.witness.facilitator)
        ? failure(
            "facilitator_mismatch",
            `the witness names ${auth.witness.facilitator} as the facilitator; this one settles as ${ctx.signers.addresses.join(", ")}`,
          )
        : null,
    amount: (max, asked) => {
      if (settling && asked > max) {
        return failure(
          "amount_mismatch",
          `settling ${asked} is more than the ${max} the payer signed for`,
          { x402Reason: "invalid_upto_evm_payload_settlement_exceeds_amount" },
        );
      }
      if (!settling && max !== asked) {
        return failure(
          "amount_mismatch",
          `the upto authorization is for at most ${max}, the requirements ask for ${asked}`,
          { x402Reason: "permit2_amount_mismatch" },
        );
      }
      return null;
    },
  });
}

function expectedTransfer(payment: UptoPayment): EvmTransfer {
  const { authorization: auth, requirements } = payment;
  return {
    token: auth.permitted.token,
    from: auth.from,
    to: auth.witness.to,
    value: requirements.amount.toString(),
  };
}

async function verify(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: UptoPayment,
  options: { readonly simulate: boolean; readonly settling?: boolean },
): Promise<Step<Verified<UptoPayment>>> {
  const { authorization: auth, requirements, signature } = payment;
  const disagreement = schemeAndNetwork(request, UPTO, {
    scheme: "invalid_upto_evm_scheme",
    network: "invalid_upto_evm_network_mismatch",
  });
  if (disagreement) return refuse(disagreement);
  const assetCheck = outcomeOf(assetIsContract(ctx, requirements.asset, options.settling));
  const payerCode = ctx.client.getCode({ address: auth.from });
  payerCode.catch(() => undefined);
  const settling = options.settling === true;
  const terms = checkTerms(ctx, payment, settling);
  if (terms) return refuse(terms);

  const sponsoring = eip2612Sponsoring(request, auth, requirements.asset, ctx);
  const permit2612 = sponsoring?.ok ? sponsoring.value : undefined;
  // With the payer's signed approval still to land, the settlement cannot be simulated now.
  const approving = !sponsoring && carriesErc20Approval(request);
  const amount = requirements.amount;
  const use = permit2612 ? "uptoEip2612" : "upto";
  // The proxy lets only the witnessed facilitator settle: simulate as that account.
  const call = {
    to: UPTO_PERMIT2_PROXY_ADDRESS,
    data: uptoSettleCalldata(auth, amount, innerSignature(signature), permit2612),
  } as const;
  const simulation =
    options.simulate &&
    amount > 0n &&
    sponsoring?.ok !== false &&
    !approving &&
    !isErc6492Signature(signature)
      ? simulateWithin(ctx, { ...call, account: auth.witness.facilitator }, { use })
      : undefined;

  const digest = uptoDigest(ctx.chainId, auth);
  const signed = await checkSignature(ctx, auth.from, digest, signature, payerCode);
  const assetProblem = assetFailure(ctx, requirements.asset, await assetCheck);
  if (assetProblem) return refuse(assetProblem);
  if (!signed.ok) {
    const f = signed.failure;
    return refuse(
      f.code === "invalid_signature" ? { ...f, x402Reason: "invalid_permit2_signature" } : f,
    );
  }
  if (signed.value.deployment) {
    return refuse(
      failure(
        "unsupported_signature",
        "upto payments from wallets not deployed yet are not supported: deploy the wallet first",
      ),
    );
  }
  if (sponsoring && !sponsoring.ok) return refuse(sponsoring.failure);
  if (approving) return withApproval(ctx, request, payment, call);

  const simulated = await simulation;
  const code = await payerCode.catch(() => undefined);
  const payerHasCode = code !== undefined && code !== "0x";
  const gas = { use, contractWallet: payerHasCode, asset: auth.permitted.token } as const;
  if (simulated && !simulated.ok) {
    if (isUnreachable(simulated.error)) {
      return refuse(chainFailure(simulated.error, "simulating the upto settlement"));
    }
    const simulatedCall = { ...call, account: auth.witness.facilitator };
    const overBound = await overBoundInSimulation(ctx, simulatedCall, gas, simulated.error);
    if (overBound) return refuse(overBound);
    const named =
      customErrorName(uptoProxyAbi, revertData(simulated.error)) ?? revertReason(simulated.error);
    const settled = { ...payment, permit2612 };
    if (named === "UnauthorizedFacilitator") {
      return refuse(
        failure("facilitator_mismatch", "the upto proxy refuses this facilitator", {
          x402Reason: "upto_unauthorized_facilitator",
        }),
      );
    }
    if (named === "AmountExceedsPermitted") {
      return refuse(
        failure("amount_mismatch", "the amount is more than the payer permitted", {
          x402Reason: "upto_amount_exceeds_permitted",
        }),
      );
    }
    return refuse(await diagnose(ctx, settled, named, UPTO_PERMIT2_PROXY_ADDRESS));
  }
  const settled: UptoPayment = { ...payment, permit2612 };
  const spend = { token: auth.permitted.token, owner: auth.from, amount };
  return {
    ok: true,
    value: {
      payment: settled,
      call,
      gas,
      expect: expectedTransfer(settled),
      spends: permit2612 ? [spend] : [spend, { ...spend, spender: PERMIT2_ADDRESS }],
      gasKey: payerHasCode ? undefined : gasKeyOf(ctx, settled),
      signer: auth.witness.facilitator,
      settledAmount: amount,
    },
  };
}

/**
 * A payment with the payer's signed approval (erc20ApprovalGasSponsoring), as the reference takes
 * it: the approval's fields checked, then what can be before it lands (the proxy, the balance);
 * the gas for it (if the payer lacks it) and the approval become the settlement's first
 * transactions, and the settle itself is simulated once they landed.
 */
async function withApproval(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: UptoPayment,
  call: { readonly to: `0x${string}`; readonly data: Hex },
): Promise<Step<Verified<UptoPayment>>> {
  const { authorization: auth, requirements } = payment;
  const token = auth.permitted.token;
  const approval = await erc20ApprovalSponsoring(ctx, request, auth.from, token);
  if (!approval) return refuse(failure("internal_error", "the approval extension vanished"));
  if (!approval.ok) return refuse(approval.failure);
  const missing = await prerequisiteFailure(
    ctx,
    { ...payment, authorization: { ...auth, permitted: { token, amount: requirements.amount } } },
    UPTO_PERMIT2_PROXY_ADDRESS,
  );
  if (missing) return refuse(missing);
  return {
    ok: true,
    value: {
      payment,
      call,
      gas: { use: "upto", contractWallet: false, asset: token },
      expect: expectedTransfer(payment),
      spends: [{ token, owner: auth.from, amount: requirements.amount }],
      preludes: approvalPreludes(approval.value, token, requirements.amount),
      signer: auth.witness.facilitator,
      settledAmount: requirements.amount,
    },
  };
}

const gasKeyOf = (ctx: EvmContext, payment: UptoPayment) =>
  `${ctx.chainId}:${payment.authorization.permitted.token}:upto${payment.permit2612 ? "+2612" : ""}`;

export const uptoMethod: ExactMethod<UptoPayment> = {
  name: "upto",
  accepts: (payload) => "permit2Authorization" in payload,

  parse: (_ctx, request) => parsePermit2(request, payloadSchema),

  identify: (ctx, payment) => permit2Identity(ctx, payment.authorization, gasKeyOf(ctx, payment)),

  verify,

  sameAsJournal(ctx, payment, entry) {
    const { authorization: auth, signature } = payment;
    const digest = uptoDigest(ctx.chainId, auth);
    return sameAsJournaled(ctx, entry, expectedTransfer(payment), true, {
      owner: auth.from,
      digest,
      signature,
    });
  },

  diagnose: (ctx, payment, revert) => diagnose(ctx, payment, revert, UPTO_PERMIT2_PROXY_ADDRESS),

  revertedReason: "invalid_upto_evm_transaction_failed",
};
