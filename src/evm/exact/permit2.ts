/**
 * `exact` on EVM through Permit2 and the x402 exact Permit2 proxy (x402 v2): for tokens without
 * EIP-3009. The payer signs a PermitWitnessTransferFrom whose spender is the proxy and whose
 * witness names the recipient; the proxy moves the tokens through Permit2, which the payer must
 * have approved on the token, unless the payment carries an `eip2612GasSponsoring` permit that
 * the proxy applies in the same transaction. Checks run in the reference SDK's order.
 */
import { type Hex, isAddressEqual, isErc6492Signature } from "viem";
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
} from "./checks.js";
import {
  approvalPreludes,
  carriesErc20Approval,
  erc20ApprovalSponsoring,
} from "./erc20-approval.js";
import { address, signatureBytes, uint256 } from "./fields.js";
import type { ExactMethod, Verified } from "./method.js";
import {
  checkTerms,
  diagnose,
  type Permit2Payment,
  parsePermit2,
  permit2Identity,
  prerequisiteFailure,
  sameAsJournaled,
} from "./permit2-checks.js";
import {
  customErrorName,
  EXACT_PERMIT2_PROXY_ADDRESS,
  exactPermit2ProxyAbi,
  PERMIT2_ADDRESS,
  permit2Digest,
  settleCalldata,
} from "./permit2-encoding.js";
import { eip2612Sponsoring } from "./permit2-extensions.js";
import { checkSignature, innerSignature, withDeployment } from "./signature.js";

const payloadSchema = z.object({
  signature: signatureBytes,
  permit2Authorization: z.object({
    from: address,
    permitted: z.object({ token: address, amount: uint256 }),
    spender: address,
    nonce: uint256,
    deadline: uint256,
    witness: z.object({ to: address, validAfter: uint256 }),
  }),
});

function expectedTransfer(payment: Permit2Payment): EvmTransfer {
  const { authorization: auth } = payment;
  return {
    token: auth.permitted.token,
    from: auth.from,
    to: auth.witness.to,
    value: auth.permitted.amount.toString(),
  };
}

const refuse = (f: Failure): { ok: false; failure: Failure } => ({ ok: false, failure: f });

const gasKeyOf = (ctx: EvmContext, payment: Permit2Payment) =>
  `${ctx.chainId}:${payment.authorization.permitted.token}:permit2${payment.permit2612 ? "+2612" : ""}`;

async function verify(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: Permit2Payment,
  options: { readonly simulate: boolean; readonly settling?: boolean },
): Promise<Step<Verified<Permit2Payment>>> {
  const { authorization: auth, requirements, signature } = payment;
  const disagreement = schemeAndNetwork(request, "exact", {
    scheme: "unsupported_payload_type",
  });
  if (disagreement) return refuse(disagreement);
  // The asset's code, the payer's code and (later) the simulation go out in one batch.
  const assetCheck = outcomeOf(assetIsContract(ctx, requirements.asset, options.settling));
  const payerCode = ctx.client.getCode({ address: auth.from });
  payerCode.catch(() => undefined);
  const terms = checkTerms(ctx, payment);
  if (terms) return refuse(terms);

  // The extension is judged after the signature, as the reference does; read it now to batch.
  const sponsoring = eip2612Sponsoring(request, payment.authorization, requirements.asset, ctx);
  const permit2612 = sponsoring?.ok ? sponsoring.value : undefined;
  // Permit2 checks the signature itself: it gets the one inside an ERC-6492 wrapper.
  const call = {
    to: EXACT_PERMIT2_PROXY_ADDRESS,
    data: settleCalldata(auth, innerSignature(signature), permit2612),
  } as const;
  const wrapped = isErc6492Signature(signature);
  // With the payer's approval still to land, the settlement cannot be simulated now.
  const approving = !sponsoring && carriesErc20Approval(request);
  const use = permit2612 ? "permit2Eip2612" : "permit2";
  const simulation =
    options.simulate && sponsoring?.ok !== false && !wrapped && !approving
      ? simulateWithin(ctx, call, { use })
      : undefined;

  const digest = permit2Digest(ctx.chainId, auth);
  const signed = await checkSignature(ctx, auth.from, digest, signature, payerCode);
  // The reference reports a missing asset contract before the signature's verdict.
  const assetProblem = assetFailure(ctx, requirements.asset, await assetCheck);
  if (assetProblem) return refuse(assetProblem);
  if (!signed.ok) {
    const f = signed.failure;
    return refuse(
      f.code === "invalid_signature" ? { ...f, x402Reason: "invalid_permit2_signature" } : f,
    );
  }
  if (sponsoring && !sponsoring.ok) return refuse(sponsoring.failure);
  const { deployment } = signed.value;
  if (approving) {
    const deployed = deployment !== undefined;
    return withApproval(ctx, request, payment, withDeployment(call, deployment), deployed);
  }

  // An undeployed wallet is deployed in the settling transaction: that is what is simulated.
  const settleCall = withDeployment(call, deployment);
  const simulated = !options.simulate
    ? undefined
    : simulation
      ? await simulation
      : await simulateWithin(ctx, settleCall, { use, deployment: !!deployment });
  const code = await payerCode.catch(() => undefined);
  const payerHasCode = deployment !== undefined || (code !== undefined && code !== "0x");
  const gas = {
    use,
    contractWallet: payerHasCode,
    deployment: deployment !== undefined,
    asset: auth.permitted.token,
  } as const;
  if (simulated && !simulated.ok) {
    if (isUnreachable(simulated.error)) {
      return refuse(chainFailure(simulated.error, "simulating the Permit2 settlement"));
    }
    const overBound = await overBoundInSimulation(ctx, settleCall, gas, simulated.error);
    if (overBound) return refuse(overBound);
    const named =
      customErrorName(exactPermit2ProxyAbi, revertData(simulated.error)) ??
      revertReason(simulated.error);
    return refuse(await diagnose(ctx, { ...payment, permit2612 }, named));
  }
  const settled: Permit2Payment = { ...payment, permit2612 };
  const spends = [{ token: auth.permitted.token, owner: auth.from, amount: auth.permitted.amount }];
  return {
    ok: true,
    value: {
      payment: settled,
      call: settleCall,
      gas,
      expect: expectedTransfer(settled),
      // With an EIP-2612 permit the allowance is set in the same transaction; else it is spent.
      spends: permit2612
        ? spends
        : [...spends, { ...spends[0], spender: PERMIT2_ADDRESS } as (typeof spends)[0]],
      gasKey: payerHasCode ? undefined : gasKeyOf(ctx, settled),
    },
  };
}

/**
 * A payment with the payer's signed approval (erc20ApprovalGasSponsoring): checked as far as it
 * can be before the approval lands (the proxy, the balance), as the reference does; the
 * approval and the gas for it become the settlement's first transactions.
 */
async function withApproval(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: Permit2Payment,
  call: { readonly to: `0x${string}`; readonly data: Hex },
  /** The call deploys the payer's wallet first (ERC-6492). */
  deployed: boolean,
): Promise<Step<Verified<Permit2Payment>>> {
  const { authorization: auth } = payment;
  const token = auth.permitted.token;
  const approval = await erc20ApprovalSponsoring(ctx, request, auth.from, token);
  if (!approval) return refuse(failure("internal_error", "the approval extension vanished"));
  if (!approval.ok) return refuse(approval.failure);
  const missing = await prerequisiteFailure(ctx, payment);
  if (missing) return refuse(missing);
  return {
    ok: true,
    value: {
      payment,
      call,
      gas: { use: "permit2", contractWallet: deployed, deployment: deployed, asset: token },
      expect: expectedTransfer(payment),
      spends: [{ token, owner: auth.from, amount: auth.permitted.amount }],
      preludes: approvalPreludes(approval.value, token, auth.permitted.amount),
    },
  };
}

export const permit2Method: ExactMethod<Permit2Payment> = {
  name: "permit2",
  accepts: (payload) => "permit2Authorization" in payload,

  parse: (_ctx, request) => parsePermit2(request, payloadSchema),

  identify: (ctx, payment) => permit2Identity(ctx, payment.authorization, gasKeyOf(ctx, payment)),

  verify,

  sameAsJournal(ctx, payment, entry) {
    const { requirements, authorization: auth, signature } = payment;
    const asked =
      isAddressEqual(requirements.payTo, auth.witness.to) &&
      requirements.amount === auth.permitted.amount;
    const digest = permit2Digest(ctx.chainId, auth);
    return sameAsJournaled(ctx, entry, expectedTransfer(payment), asked, {
      owner: auth.from,
      digest,
      signature,
    });
  },

  diagnose,
};
