/**
 * Address lookup tables (issue 26, item 6), on the local Solana devnet beside the official
 * @x402/svm 2.27 facilitator. The tables are made on the devnet by the Address Lookup Table
 * program (its instructions built by hand: test/helpers/svm-lookup.ts), and litesvm resolves the
 * lookups of v0 transactions as a validator does (a table the runtime lacks fails as
 * `InvalidAddressLookupTableOwner`, the fee payer loaded twice as `AccountLoadedTwice`).
 *
 * The payments are the official client's, compressed as a wallet would compress them (its source,
 * mint and destination taken from a table) and signed again by the payer; some are then edited in
 * ways no compiler makes (the fee payer loaded through a table beside its static key). Before,
 * ours refused any table (`invalid_exact_svm_smart_wallet_alt_resolution_not_available`); now it
 * resolves them and checks the resolved transaction. Each case says the official verdict; where
 * ours differs, the case says why. The caps, x402 v1 and the checks without a cluster:
 * test/svm-lookup-limits.test.ts.
 */
import type { CompiledTransactionMessage } from "@solana/kit";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SvmDevKey } from "../src/svm/devnet/index.js";
import { decodeSvmTransaction } from "../src/svm/exact/decode.js";
import { handlePost } from "./helpers/facilitator.js";
import { randomAddress } from "./helpers/svm-build.js";
import { svmLamports, svmTokenBalance } from "./helpers/svm-devnet.js";
import { atAccount, loadAlso } from "./helpers/svm-lookup.js";
import {
  type LookupBench,
  type Payment,
  signerOf,
  startLookupBench,
} from "./helpers/svm-lookup-bench.js";

let bench: LookupBench;

beforeAll(async () => {
  bench = await startLookupBench();
});

afterAll(async () => {
  await bench?.stop();
});

const payer = (n: number) => bench.devnet.payers[n] as SvmDevKey;
const payeeBalance = () => svmTokenBalance(bench.devnet, bench.devnet.payee.address);
const feePayerLamports = () => svmLamports(bench.devnet, bench.devnet.feePayer.address);

describe("a payment whose accounts come from a lookup table", () => {
  test("verified and settled as the official facilitator does: the tokens move", async () => {
    const [mine, theirs] = [await bench.payment(), await bench.payment({ amount: 2_000n })];
    const decoded = decodeSvmTransaction(mine.payload.payload.transaction);
    if (!decoded.ok) throw new Error(decoded.message);
    expect(decoded.transaction.lookupTableCount).toBe(1);
    // Source, mint and destination are read from the table, not the static keys.
    for (const account of bench.contents.slice(0, 3)) {
      expect(decoded.transaction.staticAccounts).not.toContain(account);
    }
    const [payee, source] = [
      await payeeBalance(),
      await svmTokenBalance(bench.devnet, payer(1).address),
    ];

    expect(await bench.officialVerify(theirs)).toEqual({ isValid: true, payer: payer(1).address });
    expect(
      await bench.reference.settle(theirs.payload, theirs.requirements as never),
    ).toMatchObject({
      success: true,
    });

    const v = await bench.oursVerdicts(mine);
    expect(v.verify).toEqual({ status: 200, body: { success: true, payer: payer(1).address } });
    expect(v.verifyX402.body).toEqual({ isValid: true, payer: payer(1).address });
    expect(v.settle).toMatchObject({ status: 200, body: { success: true } });
    // The same transaction again: one success per transaction, as for any other.
    expect(v.settleX402.body).toMatchObject({
      success: false,
      errorReason: "duplicate_settlement",
    });
    expect(await payeeBalance()).toBe(payee + 3_000n);
    expect(await svmTokenBalance(bench.devnet, payer(1).address)).toBe(source - 3_000n);
  });

  test("a payer signing many payments of its whole balance at once: one is paid", async () => {
    // The in-flight ledger reads the source the table gives, as a static one.
    const whole = await svmTokenBalance(bench.devnet, payer(2).address);
    const payments = await Promise.all(
      Array.from({ length: 5 }, () => bench.payment({ from: 2, amount: whole })),
    );
    const lamports = await feePayerLamports();
    const answers = await Promise.all(
      payments.map(({ payload, requirements }) =>
        handlePost(bench.ours, "/settle", { payload, requirements }),
      ),
    );
    const codes = answers.map((a) => (a.body.success ? "success" : a.body.error));
    expect(codes.filter((c) => c === "success")).toHaveLength(1);
    expect(codes).toContain("insufficient_funds");
    expect(
      codes
        .filter((c) => c !== "success")
        .every((c) => c === "insufficient_funds" || c === "simulation_failed"),
    ).toBe(true);
    expect(await svmTokenBalance(bench.devnet, payer(2).address)).toBe(0n);
    expect(await feePayerLamports()).toBe(lamports - 10_001n);
  });
});

interface Refused {
  readonly name: string;
  readonly make: () => Promise<Payment>;
  /** Ours: the x402 reason and our code. */
  readonly reason: string;
  readonly code: string;
  /** The official verdict: its reason (a prefix: it appends details), or what it throws. */
  readonly official: { reason: string } | { threw: RegExp };
}

const FEE_PAYER_REASON = "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds";
const SIMULATION = "invalid_exact_svm_transaction_simulation_failed";

const refused: Refused[] = [
  {
    name: "a table the cluster does not have",
    make: () => bench.payment({ inTable: randomAddress() }),
    reason: "invalid_exact_svm_smart_wallet_alt_resolution_failed",
    code: "lookup_table_unresolved",
    official: { reason: "invalid_exact_svm_smart_wallet_alt_resolution_failed" },
  },
  {
    name: "an account that is not a lookup table (the payee's wallet)",
    make: () => bench.payment({ inTable: bench.devnet.payee.address }),
    reason: "invalid_exact_svm_smart_wallet_alt_resolution_failed",
    code: "lookup_table_unresolved",
    official: { reason: "invalid_exact_svm_smart_wallet_alt_resolution_failed" },
  },
  {
    name: "an index past the table's end",
    make: () => bench.payment({ edit: loadAlso(40, () => {}) }),
    reason: "invalid_exact_svm_payload_transaction_could_not_be_decoded",
    code: "invalid_request",
    official: { reason: "invalid_exact_svm_payload_transaction_could_not_be_decoded" },
  },
  {
    name: "the destination a table gives is not the payee's account (payer 2's instead)",
    // The destination's lookup (table entry 2) points at entry 5: payer 2's token account.
    make: () =>
      bench.payment({
        edit: (m) => {
          const edited = structuredClone(m) as CompiledTransactionMessage & {
            addressTableLookups: { writableIndexes: number[] }[];
          };
          const lookup = edited.addressTableLookups[0];
          if (lookup) lookup.writableIndexes = lookup.writableIndexes.map((i) => (i === 2 ? 5 : i));
          return edited;
        },
      }),
    reason: "invalid_exact_svm_payload_recipient_mismatch",
    code: "recipient_mismatch",
    official: { reason: "invalid_exact_svm_payload_recipient_mismatch" },
  },
  {
    name: "our fee payer, loaded through the table, as the transfer's authority",
    make: () => bench.payment({ edit: loadAlso(3, atAccount(2, 3)) }),
    reason: FEE_PAYER_REASON,
    code: "fee_payer_in_transfer",
    // 2.27 reads the transfer's authority from the static keys only (its
    // getTokenPayerFromTransaction): one from a table makes its verify throw.
    official: { threw: /^TypeError: Cannot read properties of undefined/ },
  },
  {
    name: "our fee payer, loaded through the table, as the transfer's source",
    make: () => bench.payment({ edit: loadAlso(3, atAccount(2, 0)) }),
    reason: FEE_PAYER_REASON,
    code: "fee_payer_in_transfer",
    // It checks the authority only; the cluster refuses the fee payer loaded twice.
    official: { reason: SIMULATION },
  },
  {
    name: "our fee payer, loaded through the table, as a fifth account of the transfer",
    make: () => bench.payment({ edit: loadAlso(3, atAccount(2, 4)) }),
    reason: FEE_PAYER_REASON,
    code: "fee_payer_in_transfer",
    official: { reason: SIMULATION },
  },
  {
    name: "our fee payer, loaded through the table, as the transfer's destination",
    make: () => bench.payment({ edit: loadAlso(3, atAccount(2, 2)) }),
    reason: FEE_PAYER_REASON,
    code: "fee_payer_in_transfer",
    official: { reason: "invalid_exact_svm_payload_recipient_mismatch" },
  },
  {
    name: "our fee payer, loaded through the table, in the memo's accounts",
    make: () => bench.payment({ edit: loadAlso(3, atAccount(3, 0)) }),
    reason: FEE_PAYER_REASON,
    code: "fee_payer_in_transfer",
    official: { reason: SIMULATION },
  },
];

describe("refused, nothing sent", () => {
  test.each(refused)("$name", async ({ make, reason, code, official }) => {
    const payment = await make();
    const theirs = await bench.officialVerify(payment);
    if ("threw" in official) {
      expect(theirs).toEqual({ threw: expect.stringMatching(official.threw) });
    } else {
      expect(theirs).toMatchObject({ isValid: false });
      expect((theirs as { invalidReason: string }).invalidReason.startsWith(official.reason)).toBe(
        true,
      );
    }
    const [payee, lamports] = [await payeeBalance(), await feePayerLamports()];
    const v = await bench.oursVerdicts(payment);
    for (const answer of [v.verify, v.settle]) {
      expect(answer).toMatchObject({ status: 400, body: { success: false, error: code } });
    }
    expect(v.verifyX402.body).toMatchObject({ isValid: false, invalidReason: reason });
    expect(v.settleX402.body).toMatchObject({ success: false, errorReason: reason });
    expect(await payeeBalance()).toBe(payee);
    expect(await feePayerLamports()).toBe(lamports);
  });

  test("another fee payer of ours in the transfer through the table: the reference takes it", async () => {
    // Not the transaction's fee payer, so nothing is loaded twice and the transfer simulates: a
    // facilitator with both keys (as ours here) accepts it in 2.27, which checks the authority
    // only. Ours keeps its fee payers out of every instruction's accounts.
    const payment = await bench.payment({ edit: loadAlso(4, atAccount(2, 4)) });
    const signer = await signerOf(bench.devnet.feePayer);
    const both = {
      ...toFacilitatorSvmSigner(signer, { defaultRpcUrl: bench.devnet.rpcUrl }),
      getAddresses: () => [signer.address, bench.otherFeePayer.address],
    };
    const scheme = new ExactSvmFacilitator(both as never);
    expect(await scheme.verify(payment.payload, payment.requirements as never)).toEqual({
      isValid: true,
      payer: payer(1).address,
    });
    const v = await bench.oursVerdicts(payment);
    expect(v.verifyX402.body).toMatchObject({
      isValid: false,
      invalidReason: FEE_PAYER_REASON,
      invalidMessage: expect.stringContaining(bench.otherFeePayer.address),
    });
    expect(v.settle).toMatchObject({ status: 400, body: { error: "fee_payer_in_transfer" } });
  });
});
