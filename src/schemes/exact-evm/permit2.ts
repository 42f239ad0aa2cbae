/**
 * `exact` on EVM through Permit2 and the x402 exact Permit2 proxy (x402 v2): for tokens without
 * EIP-3009. The payer signs a PermitWitnessTransferFrom whose spender is the proxy and whose
 * witness names the recipient; the proxy moves the tokens through Permit2, which the payer must
 * have approved on the token, unless the payment carries an `eip2612GasSponsoring` permit that
 * the proxy applies in the same transaction. Checks run in the reference SDK's order.
 */
import { type Hex, isAddressEqual, isErc6492Signature, size } from "viem";
import { z } from "zod";
import type { ExpectedTransfer } from "../../chain/journal.js";
import { revertData, revertReason } from "../../chain/revert.js";
import { isUnreachable } from "../../chain/rpc.js";
import { type Failure, failure } from "../../errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue } from "../../protocol/schemas.js";
import { tooEarly, tooLate } from "../../words.js";
import type { SchemeContext } from "../types.js";
import { assetFailure, assetIsContract, chainFailure, outcomeOf, type Step } from "./checks.js";
import { address, hexBytes, uint256 } from "./fields.js";
import type { ExactMethod, Verified } from "./method.js";
import {
  type Eip2612Permit,
  EXACT_PERMIT2_PROXY_ADDRESS,
  exactPermit2ProxyAbi,
  PERMIT2_ADDRESS,
  type Permit2Authorization,
  permit2Digest,
  permit2ReadsAbi,
  proxyErrorName,
  settleCalldata,
} from "./permit2-encoding.js";
import { eip2612Sponsoring } from "./permit2-extensions.js";
import { type EvmRequirements, parseEvmRequirements } from "./requirements.js";
import { checkSignature, innerSignature, recoversTo, withDeployment } from "./signature.js";

const payloadSchema = z.object({
  signature: hexBytes,
  permit2Authorization: z.object({
    from: address,
    permitted: z.object({ token: address, amount: uint256 }),
    spender: address,
    nonce: uint256,
    deadline: uint256,
    witness: z.object({ to: address, validAfter: uint256 }),
  }),
});

interface Permit2Payment {
  readonly authorization: Permit2Authorization;
  readonly signature: Hex;
  readonly requirements: EvmRequirements;
  /** The payer's EIP-2612 permit for Permit2, when the payment carries one. */
  readonly permit2612?: Eip2612Permit | undefined;
}

/** The reference refuses authorizations whose deadline is within this many seconds. */
const DEADLINE_HEADROOM_SECONDS = 6n;

const refuse = (f: Failure): { ok: false; failure: Failure } => ({ ok: false, failure: f });

/** The checks that need no chain, in the reference's order: spender, recipient, time, amount, token. */
function checkTerms(ctx: SchemeContext, payment: Permit2Payment): Failure | null {
  const { authorization: auth, requirements } = payment;
  const now = BigInt(Math.floor(ctx.now()));
  if (!isAddressEqual(auth.spender, EXACT_PERMIT2_PROXY_ADDRESS)) {
    return failure(
      "spender_mismatch",
      `the Permit2 spender is ${auth.spender}; it must be the x402 exact Permit2 proxy ${EXACT_PERMIT2_PROXY_ADDRESS}`,
    );
  }
  if (!isAddressEqual(auth.witness.to, requirements.payTo)) {
    return failure(
      "recipient_mismatch",
      `the witness pays ${auth.witness.to}, requirements.payTo is ${requirements.payTo}`,
      { x402Reason: "invalid_permit2_recipient_mismatch" },
    );
  }
  if (auth.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    return failure(
      "authorization_expired",
      tooLate(
        "the Permit2 authorization",
        "payload.permit2Authorization.deadline",
        auth.deadline,
        now,
        DEADLINE_HEADROOM_SECONDS,
      ),
      { x402Reason: "permit2_deadline_expired" },
    );
  }
  if (auth.witness.validAfter > now) {
    return failure(
      "authorization_not_yet_valid",
      tooEarly(
        "the Permit2 authorization",
        "payload.permit2Authorization.witness.validAfter",
        auth.witness.validAfter,
        now,
      ),
      { x402Reason: "permit2_not_yet_valid" },
    );
  }
  if (auth.permitted.amount !== requirements.amount) {
    return failure(
      "amount_mismatch",
      `the Permit2 authorization is for ${auth.permitted.amount}, the requirements ask for exactly ${requirements.amount}`,
      { x402Reason: "permit2_amount_mismatch" },
    );
  }
  if (!isAddressEqual(auth.permitted.token, requirements.asset)) {
    return failure(
      "asset_mismatch",
      `the Permit2 authorization moves ${auth.permitted.token}, requirements.asset is ${requirements.asset}`,
    );
  }
  return null;
}

/**
 * Why the proxy call would revert (or did), in the reference's order: the proxy missing, the
 * balance, the allowance for Permit2; then, finer than the reference, a Permit2 nonce already
 * used (its x402 reason stays the reference's `permit2_simulation_failed`).
 */
async function diagnose(
  ctx: SchemeContext,
  payment: Permit2Payment,
  revert: string | undefined,
): Promise<Failure> {
  const { authorization: auth } = payment;
  const token = auth.permitted.token;
  const wordPos = auth.nonce >> 8n;
  const [proxy, balance, allowance, bitmap] = await Promise.all([
    outcomeOf(
      ctx.client.readContract({
        address: EXACT_PERMIT2_PROXY_ADDRESS,
        abi: exactPermit2ProxyAbi,
        functionName: "PERMIT2",
      }),
    ),
    outcomeOf(
      ctx.client.readContract({
        address: token,
        abi: permit2ReadsAbi,
        functionName: "balanceOf",
        args: [auth.from],
      }),
    ),
    outcomeOf(
      ctx.client.readContract({
        address: token,
        abi: permit2ReadsAbi,
        functionName: "allowance",
        args: [auth.from, PERMIT2_ADDRESS],
      }),
    ),
    outcomeOf(
      ctx.client.readContract({
        address: PERMIT2_ADDRESS,
        abi: permit2ReadsAbi,
        functionName: "nonceBitmap",
        args: [auth.from, wordPos],
      }),
    ),
  ]);
  const unreachable = [proxy, balance, allowance, bitmap].find(
    (r) => !r.ok && isUnreachable(r.error),
  );
  if (unreachable && !unreachable.ok) {
    return chainFailure(unreachable.error, "diagnosing the failed simulation");
  }
  const amount = auth.permitted.amount;
  const detail = revert ? `: ${revert}` : "";
  if (!proxy.ok) {
    return failure(
      "proxy_not_deployed",
      `the x402 exact Permit2 proxy ${EXACT_PERMIT2_PROXY_ADDRESS} does not answer on chain ${ctx.chainId}`,
    );
  }
  if (balance.ok && balance.value < amount) {
    return failure(
      "insufficient_funds",
      `the payer holds ${balance.value}, the payment needs ${amount}`,
      {
        x402Reason: "permit2_insufficient_balance",
      },
    );
  }
  if (allowance.ok && allowance.value < amount) {
    return failure(
      "allowance_required",
      `the payer allows Permit2 (${PERMIT2_ADDRESS}) ${allowance.value} of this token and the payment needs ${amount}: the payer must approve Permit2, or send an eip2612GasSponsoring permit`,
    );
  }
  if (bitmap.ok && ((bitmap.value >> (auth.nonce & 0xffn)) & 1n) === 1n) {
    return failure(
      "nonce_already_used",
      `Permit2 nonce ${auth.nonce} of ${auth.from} was already used or invalidated`,
      { x402Reason: "permit2_simulation_failed" },
    );
  }
  return failure("simulation_failed", `the Permit2 settlement would revert${detail}`, {
    x402Reason: "permit2_simulation_failed",
  });
}

function expectedTransfer(payment: Permit2Payment): ExpectedTransfer {
  const { authorization: auth } = payment;
  return {
    token: auth.permitted.token,
    from: auth.from,
    to: auth.witness.to,
    value: auth.permitted.amount.toString(),
  };
}

const gasKeyOf = (ctx: SchemeContext, payment: Permit2Payment) =>
  `${ctx.chainId}:${payment.authorization.permitted.token}:permit2${payment.permit2612 ? "+2612" : ""}`;

async function verify(
  ctx: SchemeContext,
  request: PaymentRequest,
  payment: Permit2Payment,
  options: { readonly simulate: boolean },
): Promise<Step<Verified<Permit2Payment>>> {
  const { authorization: auth, requirements, signature } = payment;
  if (request.payloadScheme !== "exact") {
    return refuse(
      failure("scheme_mismatch", `the payload's scheme "${request.payloadScheme}" is not "exact"`, {
        x402Reason: "unsupported_payload_type",
      }),
    );
  }
  if (request.payloadNetwork !== request.requirements.network) {
    return refuse(
      failure(
        "network_mismatch",
        `the payload's network "${request.payloadNetwork}" differs from the requirements' "${request.requirements.network}"`,
      ),
    );
  }
  // The asset's code, the payer's code and (later) the simulation go out in one batch.
  const assetCheck = outcomeOf(assetIsContract(ctx, requirements.asset));
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
  const simulation =
    options.simulate && sponsoring?.ok !== false && !wrapped
      ? outcomeOf(ctx.client.call(call))
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

  // An undeployed wallet is deployed in the settling transaction: that is what is simulated.
  const { deployment } = signed.value;
  const settleCall = withDeployment(call, deployment);
  const simulated = !options.simulate
    ? undefined
    : simulation
      ? await simulation
      : await outcomeOf(ctx.client.call(settleCall));
  if (simulated && !simulated.ok) {
    if (isUnreachable(simulated.error)) {
      return refuse(chainFailure(simulated.error, "simulating the Permit2 settlement"));
    }
    const named = proxyErrorName(revertData(simulated.error)) ?? revertReason(simulated.error);
    return refuse(await diagnose(ctx, { ...payment, permit2612 }, named));
  }
  const code = await payerCode.catch(() => undefined);
  const payerHasCode = deployment !== undefined || (code !== undefined && code !== "0x");
  const settled: Permit2Payment = { ...payment, permit2612 };
  const spends = [{ token: auth.permitted.token, owner: auth.from, amount: auth.permitted.amount }];
  return {
    ok: true,
    value: {
      payment: settled,
      call: settleCall,
      expect: expectedTransfer(settled),
      // With an EIP-2612 permit the allowance is set in the same transaction; else it is spent.
      spends: permit2612
        ? spends
        : [...spends, { ...spends[0], spender: PERMIT2_ADDRESS } as (typeof spends)[0]],
      gasKey: payerHasCode ? undefined : gasKeyOf(ctx, settled),
    },
  };
}

export const permit2Method: ExactMethod<Permit2Payment> = {
  name: "permit2",
  accepts: (payload) => "permit2Authorization" in payload,

  parse(_ctx, request) {
    const payload = payloadSchema.safeParse(request.payload);
    if (!payload.success) {
      const prefix = `${request.paths.payload}.payload`;
      return { ok: false, failure: invalidField(describeIssue(payload.error, prefix), prefix) };
    }
    const requirements = parseEvmRequirements(request);
    if (!requirements.ok) return requirements;
    return {
      ok: true,
      value: {
        authorization: payload.data.permit2Authorization,
        signature: payload.data.signature,
        requirements: requirements.value,
      },
    };
  },

  /** Permit2 spends each (owner, nonce) once, whatever the token: that is the settlement's name. */
  identify(ctx, payment) {
    const { authorization: auth } = payment;
    return {
      key: `permit2:${ctx.chainId}:${auth.from}:${auth.nonce}`.toLowerCase(),
      payer: auth.from,
      gasKey: gasKeyOf(ctx, payment),
    };
  },

  verify,

  async sameAsJournal(ctx, payment, entry) {
    const { requirements, authorization: auth, signature } = payment;
    const expect = expectedTransfer(payment);
    const same =
      isAddressEqual(expect.to, entry.expect.to) &&
      expect.value === entry.expect.value &&
      isAddressEqual(expect.token, entry.expect.token) &&
      isAddressEqual(requirements.payTo, auth.witness.to) &&
      requirements.amount === auth.permitted.amount;
    if (!same) {
      return failure(
        "nonce_already_used",
        `this Permit2 nonce is already being settled for another payment (${entry.hashes.at(-1)})`,
        { x402Reason: "permit2_invalid_nonce" },
      );
    }
    if (size(signature) !== 65) return null;
    const signed = await recoversTo(ctx, auth.from, permit2Digest(ctx.chainId, auth), signature);
    return signed.ok ? null : signed.failure;
  },

  diagnose,
};
