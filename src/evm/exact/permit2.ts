/** Permit2 payments via an x402 proxy (exact; upto in ../upto) for tokens without EIP-3009: the
 * payer must have approved Permit2 or send a permit or an approval. The reference's order. */
import { isAddressEqual, isErc6492Signature } from "viem";
import { failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import * as z from "../../protocol/zod.js";
import type { EvmTransfer } from "../chain/entry.js";
import type { ContractCall } from "../chain/outcome.js";
import { revertData, revertReason } from "../chain/revert.js";
import type { EvmContext } from "../context.js";
import {
  assetFailure,
  parsePayment,
  readCode,
  refuse,
  type Step,
  schemeAndNetwork,
  settlementGas,
  signatureRefused,
  simulateWithin,
  simulationFailure,
} from "./checks.js";
import {
  approvalPreludes,
  carriesErc20Approval,
  erc20ApprovalSponsoring,
} from "./erc20-approval.js";
import { address, signatureBytes, uint256 } from "./fields.js";
import { nonceTaken, sameTransfer } from "./judge.js";
import type { ExactMethod, Verified } from "./method.js";
import {
  checkPermit2Terms,
  diagnose,
  type Permit2Payment,
  type Permit2Scheme,
  prerequisiteFailure,
} from "./permit2-checks.js";
import {
  customErrorName,
  EXACT_PERMIT2_PROXY_ADDRESS,
  exactPermit2ProxyAbi,
  PERMIT2_ADDRESS,
  type Permit2Authorization,
  permit2Digest,
  permit2SettlementKey,
  proxySettleCalldata,
} from "./permit2-encoding.js";
import { eip2612Sponsoring } from "./permit2-extensions.js";
import { checkSignature, innerSignature, journaledSigner, withDeployment } from "./signature.js";

/** A Permit2 payload whose witness has these fields. */
export function permit2Payload<W extends z.ZodMiniObject["shape"]>(witness: W) {
  return z.object({
    signature: signatureBytes,
    permit2Authorization: z.object({
      from: address,
      permitted: z.object({ token: address, amount: uint256 }),
      spender: address,
      nonce: uint256,
      deadline: uint256,
      witness: z.object(witness),
    }),
  });
}

/** exact settles what was asked (upto: what was used, at most what was signed). */
function expectedTransfer({ authorization: auth, requirements }: Permit2Payment): EvmTransfer {
  const { token } = auth.permitted;
  return { token, from: auth.from, to: auth.witness.to, value: requirements.amount.toString() };
}

const gasKeyOf = <A extends Permit2Authorization>(
  scheme: Permit2Scheme<A>,
  ctx: EvmContext,
  payment: Permit2Payment<A>,
) =>
  `${ctx.chainId}:${payment.authorization.permitted.token}:${scheme.use}${payment.permit2612 ? "+2612" : ""}`;

async function verify<A extends Permit2Authorization>(
  scheme: Permit2Scheme<A>,
  ctx: EvmContext,
  request: PaymentRequest,
  payment: Permit2Payment<A>,
  options: { readonly simulate: boolean; readonly settling?: boolean },
): Promise<Step<Verified<Permit2Payment<A>>>> {
  const { authorization: auth, requirements, signature } = payment;
  const disagreement = schemeAndNetwork(request, scheme.scheme, scheme.reasons);
  if (disagreement) return refuse(disagreement);
  // The asset's code, the payer's code and the simulation go out in one batch.
  const assetCheck = assetFailure(ctx, requirements.asset, options.settling);
  const payerCode = readCode(ctx, auth.from);
  const terms = checkPermit2Terms(ctx, payment, scheme, options.settling === true);
  if (terms) return refuse(terms);

  // The extension is judged after the signature, as the reference does; read it now to batch.
  const sponsoring = eip2612Sponsoring(request, auth, requirements.asset, ctx);
  const permit2612 = sponsoring?.ok ? sponsoring.value : undefined;
  const settled: Permit2Payment<A> = { ...payment, permit2612 };
  // exact: the amount signed (checked above).
  const amount = requirements.amount;
  const use = permit2612 ? scheme.use2612 : scheme.use;
  // Permit2 checks the signature itself: it gets the one inside an ERC-6492 wrapper.
  const call = {
    to: scheme.proxy,
    data: scheme.calldata(auth, amount, innerSignature(signature), permit2612),
  } as const;
  const settler = scheme.settler?.(auth);
  const sentBy = (c: ContractCall) => (settler ? { ...c, account: settler } : c);
  // With the payer's approval still to land, the settlement cannot be simulated now.
  const approving = !sponsoring && carriesErc20Approval(request);
  const simulation =
    options.simulate &&
    (!settler || amount > 0n) &&
    sponsoring?.ok !== false &&
    !approving &&
    !isErc6492Signature(signature)
      ? simulateWithin(ctx, sentBy(call), { use })
      : undefined;

  const digest = scheme.digest(ctx.chainId, auth);
  const signed = await checkSignature(ctx, auth.from, digest, signature, payerCode);
  // The reference reports a missing asset contract before the signature's verdict.
  const assetProblem = await assetCheck;
  if (assetProblem) return refuse(assetProblem);
  if (!signed.ok) return signatureRefused(signed.failure, "invalid_permit2_signature");
  const { deployment } = signed.value;
  if (settler && deployment) {
    const why =
      "upto payments from wallets not deployed yet are not supported: deploy the wallet first";
    return refuse(failure("unsupported_signature", why));
  }
  if (sponsoring && !sponsoring.ok) return refuse(sponsoring.failure);
  // An undeployed wallet is deployed in the settling transaction: that is what is simulated.
  const settleCall = withDeployment(call, deployment);
  const { token } = auth.permitted;
  const spend = { token, owner: auth.from, amount };
  // upto: the facilitator sends it and the success says how much moved.
  const settledBy = settler ? { signer: settler, settledAmount: amount } : {};
  if (approving) {
    // The payer's signed approval (erc20ApprovalGasSponsoring), checked as far as it can be before
    // it lands (the proxy, the balance) as the reference does: it and its gas are sent first.
    const approval = await erc20ApprovalSponsoring(ctx, request, auth.from, token);
    if (!approval) return refuse(failure("internal_error", "the approval extension vanished"));
    if (!approval.ok) return refuse(approval.failure);
    const missing = await prerequisiteFailure(ctx, auth.from, token, amount, scheme.proxy);
    if (missing) return refuse(missing);
    const deployed = deployment !== undefined;
    const gas = { use, contractWallet: deployed, deployment: deployed, asset: token } as const;
    const preludes = approvalPreludes(approval.value, token, amount);
    const expect = expectedTransfer(payment);
    const value = { payment, call: settleCall, gas, expect, spends: [spend], preludes };
    return { ok: true, value: { ...value, ...settledBy } };
  }

  // exact simulates a wrapped signature now, with its deployment.
  const simulated = simulation
    ? await simulation
    : options.simulate && !settler
      ? await simulateWithin(ctx, settleCall, { use, deployment: !!deployment })
      : undefined;
  const gas = await settlementGas(use, token, payerCode, deployment);
  const doing = `simulating the ${scheme.settlement} settlement`;
  const failed = await simulationFailure(
    ctx,
    simulated,
    sentBy(settleCall),
    gas,
    doing,
    (error) => {
      const named = customErrorName(scheme.abi, revertData(error)) ?? revertReason(error);
      return scheme.named?.(named) ?? diagnose(ctx, settled, named, scheme.proxy);
    },
  );
  if (failed) return refuse(failed);
  return {
    ok: true,
    value: {
      payment: settled,
      call: settleCall,
      gas,
      expect: expectedTransfer(settled),
      // With an EIP-2612 permit the allowance is set in the same transaction; else it is spent.
      spends: permit2612 ? [spend] : [spend, { ...spend, spender: PERMIT2_ADDRESS }],
      gasKey: gas.contractWallet ? undefined : gasKeyOf(scheme, ctx, settled),
      ...settledBy,
    },
  };
}

/** The method of a Permit2 scheme. */
export function permit2MethodOf<A extends Permit2Authorization>(
  scheme: Permit2Scheme<A>,
): ExactMethod<Permit2Payment<A>> {
  return {
    name: scheme.use,
    accepts: (payload) => "permit2Authorization" in payload,
    parse: (_ctx, request) => parsePayment(request, scheme.schema, "permit2Authorization"),
    // Permit2 spends each (owner, nonce) once, whatever the token or proxy: that names it.
    identify(ctx, payment) {
      const { from, nonce, permitted } = payment.authorization;
      const key = permit2SettlementKey(ctx.chainId, from, nonce);
      return { key, payer: from, asset: permitted.token, gasKey: gasKeyOf(scheme, ctx, payment) };
    },
    verify: (ctx, request, payment, options) => verify(scheme, ctx, request, payment, options),
    async sameAsJournal(ctx, payment, entry) {
      const { authorization: auth, signature } = payment;
      if (!scheme.asked(payment) || !sameTransfer(expectedTransfer(payment), entry)) {
        return nonceTaken(entry, "Permit2 nonce", "permit2_invalid_nonce");
      }
      return journaledSigner(ctx, auth.from, scheme.digest(ctx.chainId, auth), signature);
    },
    diagnose: (ctx, payment, revert) => diagnose(ctx, payment, revert, scheme.proxy),
    revertedReason: scheme.revertedReason,
  };
}

export const permit2Method = permit2MethodOf<Permit2Authorization>({
  scheme: "exact",
  reasons: { scheme: "unsupported_payload_type" },
  proxy: EXACT_PERMIT2_PROXY_ADDRESS,
  abi: exactPermit2ProxyAbi,
  use: "permit2",
  use2612: "permit2Eip2612",
  subject: "the Permit2 authorization",
  assetSubject: "the Permit2 authorization",
  settlement: "Permit2",
  schema: permit2Payload({ to: address, validAfter: uint256 }),
  digest: permit2Digest,
  calldata: (auth, _amount, signature, permit2612) =>
    proxySettleCalldata(exactPermit2ProxyAbi, auth, [], signature, permit2612),
  amount: (signed, asked) =>
    signed === asked
      ? null
      : failure(
          "amount_mismatch",
          `the Permit2 authorization is for ${signed}, the requirements ask for exactly ${asked}`,
          { x402Reason: "permit2_amount_mismatch" },
        ),
  asked: ({ requirements, authorization: auth }) =>
    isAddressEqual(requirements.payTo, auth.witness.to) &&
    requirements.amount === auth.permitted.amount,
});
