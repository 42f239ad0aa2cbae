/** `exact` via EIP-3009 `transferWithAuthorization`, x402 v1 and v2, in the reference SDK's
 * check order (the same first failure). */
import {
  type Address,
  getContract,
  type Hex,
  isAddressEqual,
  isErc6492Signature,
  parseAbi,
  size,
} from "viem";
import { tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { tooEarly, tooLate } from "../../protocol/words.js";
import * as z from "../../protocol/zod.js";
import type { EvmTransfer } from "../chain/entry.js";
import { receiptHasTransfer } from "../chain/receipts.js";
import { revertReason } from "../chain/revert.js";
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
  settlementGas,
  simulateWithin,
  simulationFailure,
  tokenDomain,
  unitsOf,
} from "./checks.js";
import { authorizationDigest, eip3009Abi, transferCalldata } from "./eip3009-encoding.js";
import { address, bytes32, signatureBytes, uint256 } from "./fields.js";
import { nonceTaken, sameTransfer } from "./judge.js";
import type { Verified } from "./method.js";
import { exactPaymentMethod } from "./pipeline.js";
import {
  checkSignature,
  innerSignature,
  isMalleable,
  journaledTokenSigner,
  withDeployment,
} from "./signature.js";

const payloadSchema = z.object({
  signature: signatureBytes,
  authorization: z.object({
    from: address,
    to: address,
    value: uint256,
    validAfter: uint256,
    validBefore: uint256,
    nonce: bytes32,
  }),
});

type Eip3009Payment = SignedPayment<z.infer<typeof payloadSchema>["authorization"]>;

const digestOf = (ctx: EvmContext, payment: Eip3009Payment) =>
  authorizationDigest(tokenDomain(ctx, payment), payment.authorization);

function expectedTransfer(payment: Eip3009Payment): EvmTransfer {
  const { authorization: auth, requirements } = payment;
  return { token: requirements.asset, from: auth.from, to: auth.to, value: auth.value.toString() };
}

/** The checks that need no chain, in the reference's order after the signature. */
function checkTerms(ctx: EvmContext, request: PaymentRequest, payment: Eip3009Payment) {
  const { authorization: auth, requirements } = payment;
  const now = BigInt(Math.floor(ctx.now()));
  const field = `${request.paths.payload}.payload.authorization.valid`;
  if (!isAddressEqual(auth.to, requirements.payTo)) {
    const why = `the authorization pays ${auth.to}, requirements.payTo is ${requirements.payTo}`;
    return failure("recipient_mismatch", why);
  }
  const { validAfter, validBefore } = auth;
  if (validBefore < now + DEADLINE_HEADROOM_SECONDS) {
    const at = `${field}Before`;
    const why = tooLate("the authorization", at, validBefore, now, DEADLINE_HEADROOM_SECONDS);
    return failure("authorization_expired", why);
  }
  if (validAfter > now) {
    const why = tooEarly("the authorization", `${field}After`, validAfter, now);
    return failure("authorization_not_yet_valid", why);
  }
  if (auth.value !== requirements.amount) {
    return failure(
      "amount_mismatch",
      `the authorization is for ${auth.value}, the requirements ask for exactly ${requirements.amount}`,
      request.x402Version === 1 ? { x402Reason: "invalid_exact_evm_authorization_value" } : {},
    );
  }
  return null;
}

const [used, canceled] = parseAbi([
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
]);
/** How far back to look: providers refuse wide log ranges, and a replay is usually fresh. */
const LOOKBACK_BLOCKS = 5_000n;

/** How a used nonce was used, from recent logs (anyone may submit it before us): the payer paid,
 * but never a success nor another's hash as ours. */
async function howUsed(
  ctx: EvmContext,
  authorizer: Address,
  nonce: Hex,
  expect: EvmTransfer,
): Promise<string | undefined> {
  const { token } = expect;
  try {
    const latest = await ctx.client.getBlockNumber();
    const fromBlock = latest > LOOKBACK_BLOCKS ? latest - LOOKBACK_BLOCKS : 0n;
    const filter = { address: token, args: { authorizer, nonce }, fromBlock, toBlock: latest };
    const [uses, cancels] = await Promise.all([
      ctx.client.getLogs({ ...filter, event: used }),
      ctx.client.getLogs({ ...filter, event: canceled }),
    ]);
    if (cancels[0]) return `the payer cancelled it in ${cancels[0].transactionHash}`;
    const hash = uses[0]?.transactionHash;
    if (!hash) return undefined;
    const receipt = await ctx.client.getTransactionReceipt({ hash });
    const paid = receiptHasTransfer(receipt, expect);
    // Sent by one of our keys (a journal this process lacks): said so, not "not by this facilitator".
    const ours = ctx.ownSenders.some((a) => isAddressEqual(a, receipt.from));
    const sender = isAddressEqual(receipt.from, expect.to)
      ? "the payee"
      : ours
        ? `${receipt.from} (a settlement key of this facilitator)`
        : receipt.from;
    if (!paid) return `it was used in ${hash} (sent by ${sender}) for another transfer`;
    const units = await unitsOf(ctx, token);
    const amount = tokenAmount(BigInt(expect.value), units);
    return ours
      ? `it already paid ${expect.to} ${amount} in ${hash}, sent by ${sender}: the payer did pay`
      : `it already paid ${expect.to} ${amount} in ${hash}, a transaction sent by ${sender}, not by this facilitator: the payer did pay`;
  } catch {
    return undefined;
  }
}

/** Why a transfer would revert (or did), from the token's state, in the reference's order. */
async function diagnose(
  ctx: EvmContext,
  payment: Eip3009Payment,
  revert: string | undefined,
): Promise<Failure> {
  const { authorization: auth, requirements } = payment;
  const domain = payment.domain ?? { name: "", version: "" };
  const token = getContract({ address: requirements.asset, abi: eip3009Abi, client: ctx.client });
  const units = unitsOf(ctx, requirements.asset);
  const [unreachable, used, name, version, balance] = await readTogether(
    "diagnosing the failed simulation",
    [
      token.read.authorizationState([auth.from, auth.nonce]),
      token.read.name(),
      token.read.version(),
      token.read.balanceOf([auth.from]),
    ],
  );
  if (unreachable) return unreachable;
  const detail = revert ? `: ${revert}` : "";

  if (!used.ok)
    return failure("eip3009_not_supported", `the token has no authorizationState()${detail}`);
  if (used.value) {
    const how = await howUsed(ctx, auth.from, auth.nonce, expectedTransfer(payment));
    const why = `authorization nonce ${auth.nonce} was already used or cancelled${how ? `: ${how}` : ""}`;
    return failure("nonce_already_used", why);
  }
  const reads = { name, version };
  for (const field of ["name", "version"] as const) {
    const read = reads[field];
    if (read.ok && read.value !== domain[field]) {
      const why = `the token's ${field}() is "${read.value}", requirements.extra.${field} is "${domain[field]}"`;
      return failure(`token_${field}_mismatch`, why);
    }
  }
  if (balance.ok && balance.value < auth.value) {
    return insufficientFunds(balance.value, auth.value, await units);
  }
  if (isMalleable(payment.signature)) {
    // Recovers off chain, refused by USDC on chain; the reference reports a failed simulation.
    return failure(
      "invalid_signature",
      `the signature is not in canonical form (low s, v of 27 or 28)${detail}`,
      { x402Reason: "invalid_exact_evm_transaction_simulation_failed" },
    );
  }
  return failure("simulation_failed", `the transfer would revert${detail}`);
}

async function verify(
  ctx: EvmContext,
  request: PaymentRequest,
  payment: Eip3009Payment,
  options: { readonly simulate: boolean; readonly settling?: boolean },
): Promise<Step<Verified<Eip3009Payment>>> {
  const disagrees = disagreement(request);
  if (disagrees) return refuse(disagrees);
  const { authorization: auth, requirements, signature } = payment;
  const { asset } = requirements;
  const call = { to: asset, data: transferCalldata(auth, signature) } as const;

  // The chain reads start together (one round trip), then are judged in the reference's order.
  const payerCode = readCode(ctx, auth.from);
  const termsFailure = checkTerms(ctx, request, payment);
  const assetCheck = termsFailure ? null : assetFailure(ctx, asset, options.settling);
  const simulation =
    termsFailure || !options.simulate || isErc6492Signature(signature)
      ? undefined
      : simulateWithin(ctx, call, { use: "eip3009" });

  const signed = await checkSignature(ctx, auth.from, digestOf(ctx, payment), signature, payerCode);
  if (!signed.ok) return signed;
  if (termsFailure) return refuse(termsFailure);
  const assetProblem = await assetCheck;
  if (assetProblem) return refuse(assetProblem);

  // An undeployed wallet is deployed in the settling transaction: that is what is simulated.
  const { deployment } = signed.value;
  const inner = { to: asset, data: transferCalldata(auth, innerSignature(signature)) };
  const settleCall = deployment ? withDeployment(inner, deployment) : call;
  const need = { use: "eip3009", deployment: !!deployment } as const;
  const simulated = options.simulate
    ? await (simulation ?? simulateWithin(ctx, settleCall, need))
    : undefined;
  const gas = await settlementGas("eip3009", asset, payerCode, deployment);
  const diagnosis = (error: unknown) => diagnose(ctx, payment, revertReason(error));
  const why = "simulating the transfer";
  const failed = await simulationFailure(ctx, simulated, settleCall, gas, why, diagnosis);
  if (failed) return refuse(failed);
  return {
    ok: true,
    value: {
      payment,
      call: settleCall,
      expect: expectedTransfer(payment),
      spends: [{ token: asset, owner: auth.from, amount: auth.value }],
      gas,
      // Contract wallets spend what their signature check costs: always estimate for them.
      gasKey: gas.contractWallet ? undefined : gasKeyOf(ctx, payment),
    },
  };
}

const gasKeyOf = (ctx: EvmContext, payment: Eip3009Payment) =>
  `${ctx.chainId}:${payment.requirements.asset}:${size(payment.signature)}`;

export const eip3009 = exactPaymentMethod<Eip3009Payment>({
  name: "eip3009",
  accepts: (payload) => "authorization" in payload,

  parse: (_ctx, request) => parsePayment(request, payloadSchema, "authorization"),

  /** The token spends each (from, nonce) once: that is the settlement's name. */
  identify(ctx, payment) {
    const { authorization: auth, requirements } = payment;
    return {
      key: `eip3009:${ctx.chainId}:${requirements.asset}:${auth.from}:${auth.nonce}`.toLowerCase(),
      payer: auth.from,
      asset: requirements.asset,
      gasKey: gasKeyOf(ctx, payment),
    };
  },

  /** transferWithAuthorization, unless the signature deploys a wallet first (ERC-6492). */
  plainCall(_ctx, payment) {
    if (isErc6492Signature(payment.signature)) return undefined;
    const { authorization: auth, requirements, signature } = payment;
    return { to: requirements.asset, data: transferCalldata(auth, signature) };
  },

  verify,

  async sameAsJournal(ctx, payment, entry) {
    const { requirements, authorization: auth } = payment;
    const asked = isAddressEqual(requirements.payTo, auth.to) && requirements.amount === auth.value;
    if (!asked || !sameTransfer(expectedTransfer(payment), entry)) return nonceTaken(entry);
    return journaledTokenSigner(ctx, payment, auth.from, digestOf(ctx, payment));
  },

  diagnose,
});
