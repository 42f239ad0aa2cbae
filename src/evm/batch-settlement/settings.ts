/** batch-settlement's CLI settings, the options and state it makes of them, and its gas bounds. */
import type { LocalAccount } from "viem";
import { secondsFrom, wholeNumber } from "../../core/scheme-settings.js";
import type { SchemeGas } from "../chain/gas-bounds.js";
import type { SchemeOwn } from "../context.js";
import type { SchemeSettings } from "../scheme.js";
import { BATCH_SETTLEMENT } from "./constants.js";

/** How claims are batched: up to `maxRows` rows, waiting at most `maxWaitMs` for more. */
export type ClaimBatchPolicy = BatchSettlementOwn["claimBatch"];

const DEFAULT_CLAIM_BATCH = { maxRows: 100, maxWaitMs: 500 };

/** Most channels one claim transaction applies: 60,000 + 40,000 gas each stays under 20M. */
const MAX_CLAIM_BATCH_ROWS = 500;

/** Its part of the family's options (the facilitator's, as a library takes them). */
interface BatchSettlementOptions {
  /** The receiver authorizer's key (never a settlement key); none by default. */
  readonly receiverAuthorizer?: LocalAccount | undefined;
  /** Whether /supported offers it: only when refund requests are authenticated (it signs them). */
  readonly offerReceiverAuthorizer?: boolean | undefined;
  readonly claimBatch?: { readonly maxRows?: number; readonly maxWaitMs?: number } | undefined;
}

/** What its requests read (ctx.own(BATCH_OWN)): the options with their defaults. */
const makeOwn = (options: BatchSettlementOptions) => ({
  /** The key that signs claims and refunds for sellers who leave it to us. */
  receiverAuthorizer: options.receiverAuthorizer,
  /** Its address, when /supported offers it. */
  offered: options.offerReceiverAuthorizer ? options.receiverAuthorizer?.address : undefined,
  claimBatch: {
    maxRows: options.claimBatch?.maxRows ?? DEFAULT_CLAIM_BATCH.maxRows,
    maxWaitMs: options.claimBatch?.maxWaitMs ?? DEFAULT_CLAIM_BATCH.maxWaitMs,
  },
});
type BatchSettlementOwn = ReturnType<typeof makeOwn>;

export const BATCH_OWN: SchemeOwn<BatchSettlementOwn, BatchSettlementOptions> = {
  name: BATCH_SETTLEMENT,
  make: makeOwn,
};

const ROWS = {
  // Read by the CLI as every key is, and handed over as receiverAuthorizer.
  receiverAuthorizerKey: {
    kind: "key",
    flag: "--receiver-authorizer-key-file <file>",
    env: "FACILITATOR_RECEIVER_AUTHORIZER_KEY",
    envFile: "FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE",
    key: "receiverAuthorizerKeyFile",
    help: "batch-settlement: the receiver authorizer's key file, one key that signs claims and refunds for sellers who leave them to us; never a settlement key",
  },
  claimBatchRows: {
    kind: "value",
    flag: "--claim-batch-rows <n>",
    env: "FACILITATOR_CLAIM_BATCH_ROWS",
    key: "claimBatchRows",
    parse: wholeNumber(MAX_CLAIM_BATCH_ROWS),
    shownDefault: `${DEFAULT_CLAIM_BATCH.maxRows}, at most ${MAX_CLAIM_BATCH_ROWS}`,
    help: "batch-settlement: most channels one claim transaction applies",
  },
  claimBatchWait: {
    kind: "value",
    flag: "--claim-batch-wait <seconds>",
    env: "FACILITATOR_CLAIM_BATCH_WAIT",
    key: "claimBatchWaitSeconds",
    parse: secondsFrom(0, 60, "must be a number of seconds from 0 to 60, such as 0.5"),
    shownDefault: `${DEFAULT_CLAIM_BATCH.maxWaitMs / 1000}; 0: none`,
    help: "batch-settlement: how long a claim waits for others to share its transaction",
  },
} as const;

export const BATCH_SETTINGS: SchemeSettings<typeof ROWS, BatchSettlementOptions> = {
  rows: ROWS,
  options: (values, run) => ({
    claimBatch: {
      maxRows: values.claimBatchRows as number | undefined,
      // A one-shot command has no other claims to wait for.
      maxWaitMs: run.server ? (values.claimBatchWait as number | undefined) : 0,
    },
  }),
};

/** Its own transactions' gas: a claim's bound is batchClaim plus batchClaimRow for each channel. */
export const BATCH_GAS = {
  deposit: { name: "batchDeposit", gas: 250_000n, what: "a batch-settlement deposit" },
  claim: { name: "batchClaim", gas: 60_000n, what: "a batch-settlement claim" },
  claimRow: { name: "batchClaimRow", gas: 40_000n, what: "a batch-settlement claim's row" },
  // The reference allows a settle 120,000; a refund may carry a claim.
  settle: { name: "batchSettle", gas: 120_000n, what: "a batch-settlement settle" },
  refund: { name: "batchRefund", gas: 200_000n, what: "a batch-settlement refund" },
} as const satisfies Record<string, SchemeGas>;
