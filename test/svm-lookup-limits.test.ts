/**
 * Address lookup tables (issue 26, item 6): the limits. Ours resolves at most 4 tables and 32
 * accounts loaded through them (the reference has no cap); x402 v1 payments and the checks
 * without a cluster do not resolve tables, as the reference's v1 scheme and its facilitator with
 * a signer that cannot fetch them do not. On the local Solana devnet beside the official @x402/svm
 * 2.27 facilitator; the tables are made there (test/helpers/svm-lookup.ts), the payments are the
 * official client's compressed with them. The rest: test/svm-lookup-tables.test.ts.
 */
import type { Address, CompiledTransactionMessage } from "@solana/kit";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import { ExactSvmSchemeV1 as ExactSvmFacilitatorV1 } from "@x402/svm/exact/v1/facilitator";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import type { SvmDevKey } from "../src/svm/devnet/index.js";
import { checkSvmPayment } from "../src/svm/exact/checks.js";
import { handlePost } from "./helpers/facilitator.js";
import { randomAddress } from "./helpers/svm-build.js";
import { svmLamports } from "./helpers/svm-devnet.js";
import { createLookupTable } from "./helpers/svm-lookup.js";
import { type LookupBench, signerOf, startLookupBench } from "./helpers/svm-lookup-bench.js";

let bench: LookupBench;

beforeAll(async () => {
  bench = await startLookupBench();
});

afterAll(async () => {
  await bench?.stop();
});

const payer = (n: number) => bench.devnet.payers[n] as SvmDevKey;
const feePayerLamports = () => svmLamports(bench.devnet, bench.devnet.feePayer.address);

describe("where the reference does not resolve tables, neither do we", () => {
  test("x402 v1: invalid_request (…_could_not_be_decoded) from both", async () => {
    const { payload, requirements } = await bench.payment();
    const v1Requirements = {
      ...requirements,
      network: "solana-devnet",
      maxAmountRequired: requirements.amount,
      resource: "http://localhost/paid",
      description: "",
      mimeType: "application/json",
    };
    const v1Payload = {
      x402Version: 1,
      scheme: "exact",
      network: "solana-devnet",
      payload: payload.payload,
    };
    const signer = toFacilitatorSvmSigner(await signerOf(bench.devnet.feePayer), {
      defaultRpcUrl: bench.devnet.rpcUrl,
    });
    // The official v1 scheme logs the decoding error it catches.
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    const theirs = await new ExactSvmFacilitatorV1(signer).verify(
      v1Payload as never,
      v1Requirements as never,
    );
    quiet.mockRestore();
    const reason = "invalid_exact_svm_payload_transaction_could_not_be_decoded";
    expect(theirs).toMatchObject({ isValid: false, invalidReason: reason });
    const mine = await handlePost(bench.ours, "/verify", {
      x402Version: 1,
      paymentPayload: v1Payload,
      paymentRequirements: v1Requirements,
    });
    expect(mine.body).toMatchObject({ isValid: false, invalidReason: reason });
  });

  test("the checks alone, with no cluster to read tables: …_alt_resolution_not_available", async () => {
    const { payload, requirements } = await bench.payment();
    const mine = await checkSvmPayment(payload.payload.transaction, requirements, {
      feePayers: [bench.devnet.feePayer.address],
    });
    const reason = "invalid_exact_svm_smart_wallet_alt_resolution_not_available";
    expect(mine).toMatchObject({ ok: false, x402Reason: reason });
    // The reference, with a signer that cannot fetch tables, answers the same (and a detail).
    const { fetchAddressLookupTables: _, ...signer } = toFacilitatorSvmSigner(
      await signerOf(bench.devnet.feePayer),
      { defaultRpcUrl: bench.devnet.rpcUrl },
    );
    const theirs = await new ExactSvmFacilitator(signer as never).verify(
      payload,
      requirements as never,
    );
    expect(theirs.invalidReason?.startsWith(`${reason}: `)).toBe(true);
  });
});

describe("bounded: at most 4 tables and 32 accounts loaded through them", () => {
  /** Lookups of `tables` added to the payment's: each loads its first `loads[i]` entries. */
  const withTables = (tables: readonly Address[], loads: readonly number[]) =>
    bench.payment({
      edit: (m) => {
        const edited = structuredClone(m) as CompiledTransactionMessage & {
          addressTableLookups: object[];
        };
        for (const [i, at] of tables.entries()) {
          const count = loads[i] ?? 1;
          edited.addressTableLookups.push({
            lookupTableAddress: at,
            writableIndexes: [],
            readonlyIndexes: Array.from({ length: count }, (_, k) => k),
          });
        }
        return edited;
      },
    });
  /** A table of `n` addresses no account lives at (loaded read-only, they cost nothing). */
  const filler = (n: number) =>
    createLookupTable(
      bench.devnet,
      payer(0),
      Array.from({ length: n }, () => randomAddress()),
    );

  test("at the caps: taken by both", async () => {
    // The payment's own table loads 3; 3 more tables load 27 + 1 + 1: 4 tables, 32 accounts.
    const extra = [await filler(27), await filler(1), await filler(1)];
    const payment = await withTables(extra, [27, 1, 1]);
    expect(await bench.officialVerify(payment)).toEqual({ isValid: true, payer: payer(1).address });
    const v = await bench.oursVerdicts(payment);
    expect(v.verifyX402.body).toEqual({ isValid: true, payer: payer(1).address });
    expect(v.settle).toMatchObject({ status: 200, body: { success: true } });
  });

  test.each([
    { name: "5 tables", sizes: [1, 1, 1, 1], words: "7 accounts through 5" },
    { name: "33 accounts", sizes: [30], words: "33 accounts through 2" },
  ])(
    "past them ($name): refused before any table is read; the reference has no cap and takes it",
    async ({ sizes, words }) => {
      const extra = [];
      for (const size of sizes) extra.push(await filler(size));
      const payment = await withTables(extra, sizes);
      expect(await bench.officialVerify(payment)).toEqual({
        isValid: true,
        payer: payer(1).address,
      });
      const lamports = await feePayerLamports();
      const v = await bench.oursVerdicts(payment);
      const message = expect.stringContaining(words);
      for (const answer of [v.verify, v.settle]) {
        expect(answer).toEqual({
          status: 400,
          body: { success: false, error: "lookup_table_unresolved", message },
        });
      }
      expect(v.verifyX402.body).toEqual({
        isValid: false,
        invalidReason: "invalid_exact_svm_smart_wallet_alt_resolution_failed",
        invalidMessage: message,
      });
      expect(await feePayerLamports()).toBe(lamports);
    },
  );
});
