/** `exact` via an EIP-2612 permit naming our account as spender, which then calls `transferFrom`
 * to `payTo`. The permit does not name the recipient, so serve it behind an API key. */
import {
  encodeFunctionData,
  getContract,
  type Hex,
  hashTypedData,
  isAddressEqual,
  parseAbi,
  size,
} from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import * as z from "../../protocol/zod.js";
import type { ChainAccess } from "../chain/access.js";
import type { EvmTransfer } from "../chain/entry.js";
import type { Prelude } from "../chain/prelude.js";
import type { EvmContext } from "../context.js";
import {
  assetFailure,
  DEADLINE_HEADROOM_SECONDS,
  disagreement,
  insufficientFunds,
  parsePayment,
  readCode,
  readTogether,
  refuse,
  type SignedPayment,
  type Step,
  signatureRefused,
  simulateWithin,
  simulationFailure,
  tokenDomain,
  unitsOf,
} from "./checks.js";
import { address, signatureBytes, uint256 } from "./fields.js";
import { nonceTaken, sameTransfer } from "./judge.js";
import type { Verified } from "./method.js";
import { splitSignature } from "./permit2-encoding.js";
import { exactPaymentMethod } from "./pipeline.js";
import { checkSignature, journaledTokenSigner } from "./signature.js";

const eip2612Abi = parseAbi([
  "function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)",
  "function transferFrom(address from, address to, uint256 value) returns (bool)",
  "function nonces(address owner) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
  "function balanceOf(address owner) view returns (uint256)",
]);

/** EIP-2612 Permit, as tokens define it (the devnet signs with the same types). */
export const eip2612PermitTypes = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

const payloadSchema = z.object({
  authorizationType: z.literal("permit"),
  signature: signatureBytes,
  authorization: z.object({
    owner: address,
    spender: address,
    value: uint256,
    deadline: uint256,
    nonce: uint256,
  }),
});

type PermitPayment = SignedPayment<z.infer<typeof payloadSchema>["authorization"]>;

function digestOf(ctx: EvmContext, payment: PermitPayment) {
  const domain = tokenDomain(ctx, payment);
  const message = payment.authorization;
  return hashTypedData({ domain, types: eip2612PermitTypes, primaryType: "Permit", message });
}

function expectedTransfer(payment: PermitPayment): EvmTransfer {
  const { authorization: permit, requirements } = payment;
  return {
    token: requirements.asset,
    from: permit.owner,
    to: requirements.payTo,
    value: permit.value.toString(),
  };
}

/** The permit, and the transfer after it, as calls to the token (a 65-byte signature). */
function tokenCalls(payment: PermitPayment) {
  const { authorization: permit, requirements, signature } = payment;
  const { owner, spender, value, deadline } = permit;
  const { v, r, s } = splitSignature(signature);
  const call = (data: Hex) => ({ to: requirements.asset, data }) as const;
  const args = [owner, spender, value, deadline, v, r, s] as const;
  const transfer = [owner, requirements.payTo, value] as const;
  return {
    permit: call(encodeFunctionData({ abi: eip2612Abi, functionName: "permit", args })),
    transfer: call(
      encodeFunctionData({ abi: eip2612Abi, functionName: "transferFrom", args: transfer }),
    ),
  };
}

const tokenOf = (ctx: ChainAccess, payment: PermitPayment) =>
  getContract({ address: payment.requirements.asset, abi: eip2612Abi, client: ctx.client });

/** What the token says of the permit: its nonce, the allowance it would grant, the balance. */
function tokenState(ctx: EvmContext, payment: PermitPayment) {
  const { read } = tokenOf(ctx, payment);
  const { owner, spender } = payment.authorization;
  return readTogether("reading the token", [
    read.nonces([owner]),
    read.allowance([owner, spender]),
    read.balanceOf([owner]),
  ]);
}

/** Why the permit (or the transfer after it) cannot go through, from the token's own state. */
async function diagnose(
  ctx: EvmContext,
  payment: PermitPayment,
  revert: string | undefined,
): Promise<Failure> {
  const permit = payment.authorization;
  const units = unitsOf(ctx, payment.requirements.asset);
  const [unreachable, nonce, allowance, balance] = await tokenState(ctx, payment);
  if (unreachable) return unreachable;
  if (!nonce.ok) {
    return failure(
      "simulation_failed",
      "the token has no EIP-2612 nonces(): it cannot take permits",
    );
  }
  const covered = allowance.ok && allowance.value >= permit.value;
  if (!covered && nonce.value > permit.nonce) {
    return failure(
      "nonce_already_used",
      `permit nonce ${permit.nonce} of ${permit.owner} was already used (the token is at ${nonce.value})`,
    );
  }
  if (!covered && nonce.value < permit.nonce) {
    return failure(
      "simulation_failed",
      `the token expects permit nonce ${nonce.value} from ${permit.owner}, this permit has ${permit.nonce}`,
    );
  }
  if (balance.ok && balance.value < permit.value) {
    return insufficientFunds(balance.value, permit.value, await units);
  }
  return failure(
    "simulation_failed",
    `the permit or the transfer would revert${revert ? `: ${revert}` : ""}`,
  );
}

async function verify(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: PermitPayment,
  options: { readonly simulate: boolean; readonly settling?: boolean },
): Promise<Step<Verified<PermitPayment>>> {
  const disagrees = disagreement(request);
  if (disagrees) return refuse(disagrees);
  const { authorization: permit, requirements, signature } = payment;
  const payerCode = readCode(ctx, permit.owner);
  const assetCheck = assetFailure(ctx, requirements.asset, options.settling);
  const state = tokenState(ctx, payment);

  if (size(signature) !== 65) {
    const why = `an EIP-2612 permit takes a 65-byte signature; got ${size(signature)}`;
    return refuse(failure("invalid_signature", why, { x402Reason: "invalid_permit_signature" }));
  }
  const digest = digestOf(ctx, payment);
  const signed = await checkSignature(ctx, permit.owner, digest, signature, payerCode);
  if (!signed.ok) return signatureRefused(signed.failure, "invalid_permit_signature");
  const now = BigInt(Math.floor(ctx.now()));
  if (permit.deadline < now + DEADLINE_HEADROOM_SECONDS) {
    const why = `the permit's deadline ${permit.deadline} is less than ${DEADLINE_HEADROOM_SECONDS} s after now (${now})`;
    return refuse(failure("authorization_expired", why, { x402Reason: "permit_expired" }));
  }
  // Without settlement keys (verify from the CLI needs none) whose permit it is cannot be told.
  if (ctx.signers.size > 0 && !ctx.signers.byAddress(permit.spender)) {
    const ours = ctx.signers.addresses.join(", ") || "none configured";
    const hint = isAddressEqual(permit.spender, requirements.payTo)
      ? " (x402x names payTo as the spender, which only payTo could settle)"
      : "";
    const why = `the permit's spender is ${permit.spender}${hint}; it must be one of this facilitator's settlement accounts: ${ours}`;
    return refuse(failure("spender_mismatch", why, { x402Reason: "invalid_spender_address" }));
  }
  if (permit.value !== requirements.amount) {
    return refuse(
      failure(
        "amount_mismatch",
        `the permit is for ${permit.value}, the requirements ask for exactly ${requirements.amount}`,
        { x402Reason: "invalid_exact_evm_payload_authorization_value" },
      ),
    );
  }
  const assetProblem = await assetCheck;
  if (assetProblem) return refuse(assetProblem);

  // A permit that already landed (ours, before a crash, or anyone's) left the allowance: then
  // only the transfer remains. Otherwise the permit must be the next one the token expects.
  const [unreachable, nonce, allowance, balance] = await state;
  if (unreachable) return refuse(unreachable);
  const covered = allowance.ok && allowance.value >= permit.value;
  const calls = tokenCalls(payment);
  if (
    (balance.ok && balance.value < permit.value) ||
    (!covered && (!nonce.ok || nonce.value !== permit.nonce))
  ) {
    return refuse(await diagnose(ctx, payment, undefined));
  }
  if (!covered && options.simulate) {
    const permitting = { ...calls.permit, account: permit.spender };
    const simulated = await simulateWithin(ctx, permitting, { use: "permit" });
    const need = { use: "permit", asset: requirements.asset } as const;
    const failed = await simulationFailure(
      ctx,
      simulated,
      permitting,
      need,
      "simulating the permit",
      () => diagnose(ctx, payment, undefined),
    );
    if (failed) return refuse(failed);
  }

  const prelude: Prelude = {
    name: "permit",
    tx: { call: calls.permit, gas: { use: "permit", asset: requirements.asset } },
    needed: async (c) =>
      (await tokenOf(c, payment).read.allowance([permit.owner, permit.spender])) < permit.value,
  };
  return {
    ok: true,
    value: {
      payment,
      call: calls.transfer,
      gas: { use: "transferFrom", asset: requirements.asset },
      expect: expectedTransfer(payment),
      spends: [{ token: requirements.asset, owner: permit.owner, amount: permit.value }],
      signer: permit.spender,
      preludes: [prelude],
    },
  };
}

export const permit = exactPaymentMethod<PermitPayment>({
  name: "permit",
  accepts: (payload) => payload.authorizationType === "permit",

  parse: (_ctx, request) => parsePayment(request, payloadSchema, "authorization"),

  /** The token spends each (owner, permit nonce) once: that is the settlement's name. */
  identify(ctx, payment) {
    const { authorization: permit, requirements } = payment;
    return {
      key: `permit:${ctx.chainId}:${requirements.asset}:${permit.owner}:${permit.nonce}`.toLowerCase(),
      payer: permit.owner,
      asset: requirements.asset,
    };
  },

  verify,

  async sameAsJournal(ctx, payment, entry) {
    if (!sameTransfer(expectedTransfer(payment), entry)) return nonceTaken(entry);
    return journaledTokenSigner(ctx, payment, payment.authorization.owner, digestOf(ctx, payment));
  },

  diagnose,
});
