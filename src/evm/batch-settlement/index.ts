/** The x402 `batch-settlement` scheme on EVM: deposit, voucher, claim, settle, refund by `type`. */

import { unitsOf } from "../../core/amount-floor.js";
import type { Parties } from "../../deny-list/deny-list.js";
import { failed, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { field } from "../../protocol/words.js";
import type { PaymentMethod } from "../context.js";
import { exactPaymentMethod } from "../exact/pipeline.js";
import type { EvmScheme, SchemeMoves } from "../scheme.js";
import { settleClaim } from "./batcher.js";
import { stateExtra } from "./channel.js";
import { BATCH_SETTLEMENT } from "./constants.js";
import { depositMethod } from "./deposit.js";
import { rejected } from "./reasons.js";
import { settleRefund, settleSweep } from "./refund.js";
import { BATCH_GAS, BATCH_OWN, BATCH_SETTINGS } from "./settings.js";
import { bookOf, channelState, verifyVoucher } from "./voucher.js";

const depositPipeline = exactPaymentMethod(depositMethod);

const wrongType = (what: string) => rejected("payload_type", what);

/** A deposit settles as a payment does, and answers with the channel's state. */
const deposit: PaymentMethod = {
  ...depositPipeline,
  async verify(ctx, request) {
    const result = await depositPipeline.verify(ctx, request);
    if (!result.ok) return result;
    const channelId = channelIdIn(request);
    const known = bookOf(ctx).fresh(channelId);
    return known ? { ...result, extra: stateExtra(channelId, known.state) } : result;
  },
  async settle(ctx, request, waitUntil) {
    const result = await depositPipeline.settle(ctx, request, waitUntil);
    if (!result.ok || waitUntil === "simulated") return result;
    const channelId = channelIdIn(request);
    bookOf(ctx).forget(channelId);
    const read = await channelState(ctx, channelId);
    const amount = (request.payload.deposit as { amount?: string } | undefined)?.amount;
    return {
      ...result,
      ...(amount ? { amount } : {}),
      ...(read.ok ? { extra: { channelState: stateExtra(channelId, read.state) } } : {}),
    };
  },
};

/** A deposit's channel id, once verified or settled: its payload parsed, the id its config's. */
const channelIdIn = (request: PaymentRequest) =>
  String(at(request.payload, "voucher", "channelId")).toLowerCase() as `0x${string}`;

/** A request that only verifies (a voucher), or only settles (a claim, a settle). */
function oneWay(
  name: string,
  verify: PaymentMethod["verify"] | undefined,
  settle: PaymentMethod["settle"] | undefined,
): PaymentMethod {
  const notSettled = `a ${name} is verified, not settled: the seller keeps it and claims it later`;
  return {
    name,
    accepts: () => true,
    settlementKey: () => undefined,
    verify: verify ?? (async () => failed(wrongType(`a ${name} is settled, not verified`))),
    settle: settle ?? (async () => failed(wrongType(notSettled))),
  };
}

const METHODS: Readonly<Record<string, PaymentMethod>> = {
  deposit,
  voucher: oneWay("voucher", verifyVoucher, undefined),
  refund: oneWay("refund", verifyVoucher, settleRefund),
  claim: oneWay("claim", undefined, settleClaim),
  settle: oneWay("settle", undefined, settleSweep),
};

function batchMethod(request: PaymentRequest) {
  if (request.x402Version !== 2) {
    return failure("unsupported_version", "the batch-settlement scheme is x402 v2 only");
  }
  if (request.payloadScheme !== BATCH_SETTLEMENT) {
    return rejected(
      "scheme",
      `the payload is for scheme "${request.payloadScheme}", the requirements for "${BATCH_SETTLEMENT}"`,
    );
  }
  if (request.payloadNetwork !== request.requirements.network) {
    return rejected(
      "network_mismatch",
      `the payload is for ${request.payloadNetwork}, the requirements for ${request.requirements.network}`,
    );
  }
  const type = request.payload.type;
  const method = typeof type === "string" ? METHODS[type] : undefined;
  return (
    method ??
    wrongType(
      `${request.paths.payload}.payload.type must be deposit, voucher, claim, settle or refund; got ${JSON.stringify(type)?.slice(0, 40)}`,
    )
  );
}

/** A deposit moves its amount; the others move what deposits hold, and refuse moving nothing. */
function depositMoves(request: PaymentRequest): SchemeMoves {
  if (request.payload.type !== "deposit") return "nothing";
  const amount = unitsOf((request.payload.deposit as { amount?: unknown } | undefined)?.amount);
  return amount === undefined
    ? undefined
    : { amount, field: `${request.paths.payload}.payload.deposit.amount` };
}

/** The value at `path` inside a payload node, if every step is an object. */
const at = (node: unknown, ...path: string[]) => path.reduce<unknown>(field, node);
const strings = (values: unknown[]) => values.filter((v): v is string => typeof v === "string");

/** Who a request names, for the deny list: channels' payers (and voucher keys) and receivers. */
function channelParties({ payload }: PaymentRequest): Parties {
  const claims = Array.isArray(payload.claims) ? (payload.claims as unknown[]) : [];
  const configs = [
    payload.channelConfig,
    ...claims.map((claim) => at(claim, "voucher", "channel")),
  ];
  const permit2Signer = at(payload.deposit, "authorization", "permit2Authorization", "from");
  return {
    payers: strings([
      ...configs.flatMap((c) => [at(c, "payer"), at(c, "payerAuthorizer")]),
      permit2Signer,
    ]),
    payees: strings([...configs.map((c) => at(c, "receiver")), payload.receiver]),
  };
}

export const batchSettlementScheme = {
  name: BATCH_SETTLEMENT,
  settings: BATCH_SETTINGS,
  own: BATCH_OWN,
  gas: Object.values(BATCH_GAS),
  method: batchMethod,
  parties: channelParties,
  moves: depositMoves,
  kinds(chainId, host) {
    const receiverAuthorizer = host.own(BATCH_OWN).offered;
    return [
      {
        x402Version: 2,
        scheme: BATCH_SETTLEMENT,
        network: caip2(chainId),
        ...(receiverAuthorizer ? { extra: { receiverAuthorizer } } : {}),
      },
    ];
  },
} satisfies EvmScheme;
