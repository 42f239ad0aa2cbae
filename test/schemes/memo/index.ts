/**
 * A scheme made for the tests that sends a transaction of its own rather than a payment: "memo"
 * writes the payload's note on chain, as the calldata of a transaction from our key to the
 * requirements' payTo. It shows what a scheme that sends takes: this folder and one registration
 * line (`schemes: [...EVM_SCHEMES, memoScheme]`). Its transaction goes through the settle loop
 * (core/settle-loop.ts via src/evm/send-action.ts): written down before it is sent, its gas
 * bounded by what it declares here and its fee capped, followed, and followed again by the
 * reconciler when nobody waits for it, as every other transaction. It has a setting of its own,
 * registered with it as every scheme's are (`settings`, `own`): a prefix every memo is written with,
 * from --memo-prefix, FACILITATOR_MEMO_PREFIX or memoPrefix in the config file.
 */
import { keccak256, stringToHex } from "viem";
import { SettingError, type SettingParser } from "../../../src/core/scheme-settings.js";
import type { EvmContext, PaymentMethod, SchemeOwn } from "../../../src/evm/context.js";
import type { EvmScheme } from "../../../src/evm/scheme.js";
import { sendAction } from "../../../src/evm/send-action.js";
import { failure } from "../../../src/protocol/errors.js";
import { caip2 } from "../../../src/protocol/networks.js";
import type { PaymentRequest } from "../../../src/protocol/request.js";

export const MEMO = "memo";

/** A memo transaction: 21,000 plus its calldata, well under this. */
const MEMO_GAS = { name: "memo", gas: 40_000n, what: "a memo transaction" };

const memoOf = (request: PaymentRequest) => {
  const memo = request.payload.memo;
  return typeof memo === "string" && /^[\x20-\x7e]{1,64}$/.test(memo) ? memo : undefined;
};

/** Its part of the family's options. */
interface MemoOptions {
  /** Written before every memo; none by default. */
  readonly memoPrefix?: string | undefined;
}

const MEMO_OWN: SchemeOwn<{ readonly prefix: string }, MemoOptions> = {
  name: MEMO,
  make: (options) => ({ prefix: options.memoPrefix ?? "" }),
};

/** A prefix: 1 to 16 printable characters, whichever source gives it. */
const prefix: SettingParser<string> = (value, source) => {
  if (typeof value !== "string" || !/^[\x20-\x7e]{1,16}$/.test(value)) {
    throw new SettingError(`${source.name} must be 1 to 16 printable characters`);
  }
  return value;
};

/** What is written on chain: the memo after the configured prefix. */
const writtenOf = (ctx: EvmContext, memo: string) => `${ctx.own(MEMO_OWN).prefix}${memo}`;

const keyOf = (ctx: EvmContext, memo: string) =>
  `memo:${ctx.chainId}:${keccak256(stringToHex(writtenOf(ctx, memo)))}`;

const memoMethod: PaymentMethod = {
  name: "memo",
  accepts: (payload) => typeof payload.memo === "string",
  settlementKey(ctx, request) {
    const memo = memoOf(request);
    return memo ? keyOf(ctx, memo) : undefined;
  },
  async verify(_ctx, request) {
    if (!memoOf(request)) {
      return {
        ok: false,
        failure: failure("invalid_request", "a memo is 1 to 64 printable characters"),
      };
    }
    return { ok: true, payer: request.requirements.payTo };
  },
  async settle(ctx, request, waitUntil) {
    const memo = memoOf(request);
    if (!memo) {
      return {
        ok: false,
        failure: failure("invalid_request", "a memo is 1 to 64 printable characters"),
      };
    }
    const to = request.requirements.payTo as `0x${string}`;
    const sent = await sendAction(
      ctx,
      {
        key: keyOf(ctx, memo),
        call: { to, data: stringToHex(writtenOf(ctx, memo)) },
        gas: { use: MEMO_GAS, asset: request.requirements.asset as `0x${string}` },
        name: "memo",
        chargeTo: [],
        reverts: (detail) =>
          failure("simulation_failed", `the memo would not go through: ${detail}`),
      },
      waitUntil,
    );
    return sent.ok ? { ok: true, payer: to, transactionHash: sent.hash } : sent.result;
  },
};

export const memoScheme: EvmScheme = {
  name: MEMO,
  settings: {
    rows: {
      memoPrefix: {
        kind: "value",
        flag: "--memo-prefix <text>",
        env: "FACILITATOR_MEMO_PREFIX",
        key: "memoPrefix",
        parse: prefix,
        help: "memo: the text every memo is written after",
      },
    },
    options: (values): MemoOptions => ({ memoPrefix: values.memoPrefix as string | undefined }),
  },
  own: MEMO_OWN,
  method(request) {
    if (request.x402Version !== 2) return failure("unsupported_version", "memos are x402 v2 only");
    return memoMethod;
  },
  kinds: (chainId) => [{ x402Version: 2, scheme: MEMO, network: caip2(chainId) }],
};
