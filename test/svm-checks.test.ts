/**
 * The chain-free checks of the `exact` scheme on Solana, on transactions made by the official
 * `@x402/svm` client (its mint lookup answered by a stub RPC, its blockhash taken from
 * `extra.recentBlockhash`) or, for layouts the client never makes, by the same layout built with
 * @solana/kit. Every verdict is compared with the official facilitator's `verify` (its only RPC
 * call, the final simulation, stubbed to succeed).
 */
import {
  AccountRole,
  type Address,
  generateKeyPairSigner,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { ExactSvmScheme as OfficialClient } from "@x402/svm/exact/client";
import { ExactSvmScheme as OfficialFacilitator } from "@x402/svm/exact/facilitator";
import { ExactSvmSchemeV1 as OfficialClientV1 } from "@x402/svm/exact/v1/client";
import { ExactSvmSchemeV1 as OfficialFacilitatorV1 } from "@x402/svm/exact/v1/facilitator";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkSvmPayment, type SvmCheckResult } from "../src/svm/exact/checks.js";
import { MEMO_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from "../src/svm/exact/constants.js";
import { decodeSvmTransaction } from "../src/svm/exact/decode.js";
import { buildPayment, type MintRpc, randomAddress, startMintRpc } from "./helpers/svm-build.js";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const MAX_UNITS = 200_000;
const mint = randomAddress();
const otherMint = randomAddress();
const mint2022 = randomAddress();
const blockhash = randomAddress();
const AMOUNT = 1_000n;

let rpc: MintRpc;
let payer: KeyPairSigner;
let feePayer: KeyPairSigner;
let stranger: KeyPairSigner;
let payTo: Address;

beforeAll(async () => {
  rpc = await startMintRpc(
    {
      [mint]: TOKEN_PROGRAM,
      [otherMint]: TOKEN_PROGRAM,
      [mint2022]: TOKEN_2022_PROGRAM,
    },
    blockhash,
  );
  [payer, feePayer, stranger] = await Promise.all([
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
  ]);
  payTo = randomAddress();
});

afterAll(async () => {
  await rpc?.close();
});

interface Terms {
  amount?: bigint;
  asset?: Address;
  payTo?: Address;
  feePayer?: Address;
  memo?: string;
}

function requirementsV2(terms: Terms = {}) {
  return {
    scheme: "exact",
    network: DEVNET,
    amount: String(terms.amount ?? AMOUNT),
    asset: terms.asset ?? mint,
    payTo: terms.payTo ?? payTo,
    maxTimeoutSeconds: 60,
    extra: {
      feePayer: terms.feePayer ?? feePayer.address,
      recentBlockhash: blockhash,
      ...(terms.memo ? { memo: terms.memo } : {}),
    },
  };
}

function requirementsV1(terms: Terms = {}) {
  const { amount, ...v2 } = requirementsV2(terms);
  return {
    ...v2,
    network: "solana-devnet",
    maxAmountRequired: amount,
    resource: "https://example.test/r",
    description: "",
    mimeType: "application/json",
  };
}

/** A payment made by the official client for these terms. */
async function officialPayment(terms: Terms = {}, version: 1 | 2 = 2): Promise<string> {
  if (version === 1) {
    const client = new OfficialClientV1(payer, { rpcUrl: rpc.url });
    const made = await client.createPaymentPayload(1, requirementsV1(terms) as never);
    return (made.payload as { transaction: string }).transaction;
  }
  const client = new OfficialClient(payer, { rpcUrl: rpc.url });
  const made = await client.createPaymentPayload(2, requirementsV2(terms) as never);
  return (made.payload as { transaction: string }).transaction;
}

/** The official facilitator's verdict: its verify with the simulation stubbed to pass. */
async function officialVerdict(transaction: string, terms: Terms, version: 1 | 2) {
  const signer = {
    getAddresses: () => [feePayer.address],
    simulateTransaction: async () => {},
    signTransaction: async () => {
      throw new Error("not in verify");
    },
  } as never;
  if (version === 1) {
    const requirements = requirementsV1(terms);
    const payload = {
      x402Version: 1,
      scheme: "exact",
      network: requirements.network,
      payload: { transaction },
    };
    return new OfficialFacilitatorV1(signer).verify(payload as never, requirements as never);
  }
  const requirements = requirementsV2(terms);
  const facilitator = new OfficialFacilitator(signer, undefined, { maxComputeUnits: MAX_UNITS });
  const payload = { x402Version: 2, accepted: requirements, payload: { transaction } };
  return facilitator.verify(payload as never, requirements as never);
}

async function ours(transaction: string, terms: Terms, version: 1 | 2): Promise<SvmCheckResult> {
  const requirements = requirementsV2(terms);
  return checkSvmPayment(transaction, requirements, {
    feePayers: [feePayer.address],
    x402Version: version,
    maxComputeUnits: MAX_UNITS,
  });
}

/** Both verdicts for a transaction checked against terms; each must be `expected`. */
async function expectBoth(
  transaction: string,
  terms: Terms,
  expected: string | "valid",
  version: 1 | 2 = 2,
): Promise<SvmCheckResult> {
  const [mine, theirs] = await Promise.all([
    ours(transaction, terms, version),
    officialVerdict(transaction, terms, version),
  ]);
  expect(mine.ok ? "valid" : mine.x402Reason).toBe(expected);
  expect(theirs.isValid ? "valid" : theirs.invalidReason).toBe(expected);
  if (!mine.ok && mine.payer) expect(theirs.payer).toBe(mine.payer);
  if (mine.ok) expect(theirs.payer).toBe(mine.payment.payer);
  return mine;
}

describe("exact on Solana, chain-free checks (official client and facilitator 2.27.0)", () => {
  it("accepts the official client's v2 payment and reads what it pays", async () => {
    const tx = await officialPayment();
    const result = await expectBoth(tx, {}, "valid");
    if (!result.ok) throw new Error("unreachable");
    const { payment } = result;
    expect(payment.payer).toBe(payer.address);
    expect(payment.amount).toBe(AMOUNT);
    expect(payment.mint).toBe(mint);
    expect(payment.feePayer).toBe(feePayer.address);
    expect(payment.tokenProgram).toBe(TOKEN_PROGRAM);
    expect(payment.computeUnitLimit).toBe(20_000);
    expect(payment.computeUnitPrice).toBe(1n);
    expect(payment.memos).toHaveLength(1);
    expect(payment.recentBlockhash).toBe(blockhash);
  });

  it("accepts the official client's v1 payment and a Token-2022 payment", async () => {
    await expectBoth(await officialPayment({}, 1), {}, "valid", 1);
    const terms = { asset: mint2022 };
    const result = await expectBoth(await officialPayment(terms), terms, "valid");
    expect(result.ok && result.payment.tokenProgram).toBe(TOKEN_2022_PROGRAM);
  });

  it("refuses a wrong amount (v2 and v1)", async () => {
    const tx = await officialPayment({ amount: AMOUNT - 1n });
    const result = await expectBoth(tx, {}, "invalid_exact_svm_payload_amount_mismatch");
    expect(result.ok ? "" : result.payer).toBe(payer.address);
    const v1 = await officialPayment({ amount: AMOUNT + 1n }, 1);
    await expectBoth(v1, {}, "invalid_exact_svm_payload_amount_mismatch", 1);
  });

  it("refuses a wrong mint", async () => {
    const tx = await officialPayment({ asset: otherMint });
    await expectBoth(tx, {}, "invalid_exact_svm_payload_mint_mismatch");
  });

  it("refuses a payment to someone else's token account", async () => {
    const tx = await officialPayment({ payTo: randomAddress() });
    await expectBoth(tx, {}, "invalid_exact_svm_payload_recipient_mismatch");
  });

  it("refuses a fee payer that is not ours, and a transaction paid by another fee payer", async () => {
    const theirs = { feePayer: stranger.address };
    const tx = await officialPayment(theirs);
    await expectBoth(tx, theirs, "invalid_exact_svm_fee_payer_not_managed_by_facilitator");
    await expectBoth(tx, theirs, "fee_payer_not_managed_by_facilitator", 1);
    await expectBoth(tx, {}, "invalid_exact_svm_fee_payer_mismatch");
  });

  it("refuses an extra instruction after the memo", async () => {
    const tx = await buildPayment({
      payer,
      feePayer: feePayer.address,
      mint,
      payTo,
      amount: AMOUNT,
      blockhash,
      extra: [{ programAddress: randomAddress(), data: Uint8Array.from([1]) }],
    });
    await expectBoth(tx, {}, "invalid_exact_svm_payload_unknown_fifth_instruction");
  });

  it("refuses a compute-unit price above 5,000,000 micro-lamports (the layout itself passes)", async () => {
    const base = { payer, feePayer: feePayer.address, mint, payTo, amount: AMOUNT, blockhash };
    await expectBoth(await buildPayment({ ...base, microLamports: 5_000_000n }), {}, "valid");
    const tx = await buildPayment({ ...base, microLamports: 5_000_001n });
    await expectBoth(
      tx,
      {},
      "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high",
    );
  });

  it("refuses a compute-unit limit above the cap", async () => {
    const base = { payer, feePayer: feePayer.address, mint, payTo, amount: AMOUNT, blockhash };
    await expectBoth(await buildPayment({ ...base, computeUnits: MAX_UNITS }), {}, "valid");
    const tx = await buildPayment({ ...base, computeUnits: MAX_UNITS + 1 });
    await expectBoth(
      tx,
      {},
      "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high",
    );
  });

  it("refuses the fee payer as the transfer's authority", async () => {
    const tx = await buildPayment({
      payer,
      authority: feePayer,
      feePayer: feePayer.address,
      mint,
      payTo,
      amount: AMOUNT,
      blockhash,
    });
    const result = await expectBoth(
      tx,
      {},
      "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
    );
    expect(result.ok ? "" : result.message).toMatch(/authority/);
  });

  it("refuses a payer signature that does not sign this message", async () => {
    const tx = Buffer.from(await officialPayment(), "base64");
    tx[1 + 64 + 10] ^= 1; // a byte of the payer's signature (the second; the first is empty)
    await expectBoth(tx.toString("base64"), {}, "invalid_exact_svm_payload_signature_invalid");
  });

  it("checks the memo the requirements ask for", async () => {
    const terms = { memo: "order-42" };
    await expectBoth(await officialPayment(terms), terms, "valid");
    const other = await officialPayment({ memo: "order-43" });
    await expectBoth(other, terms, "invalid_exact_svm_payload_memo_mismatch");
  });

  it("refuses layouts out of the exact order, as the reference does", async () => {
    const base = { payer, feePayer: feePayer.address, mint, payTo, amount: AMOUNT, blockhash };
    const swapped = await buildPayment({
      ...base,
      transform: ([limit, price, ...rest]) => [price, limit, ...rest] as Instruction[],
    });
    await expectBoth(
      swapped,
      {},
      "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction",
    );
    const noPrice = await buildPayment({
      ...base,
      transform: ([limit, , transfer, memo]) => [limit, transfer, memo] as Instruction[],
    });
    await expectBoth(
      noPrice,
      {},
      "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction",
    );
    const short = await buildPayment({
      ...base,
      transform: ([limit, price]) => [limit, price] as Instruction[],
    });
    await expectBoth(short, {}, "invalid_exact_svm_payload_transaction_instructions_length");
    const noMemo = await buildPayment({
      ...base,
      transform: ([limit, price, transfer]) =>
        [limit, price, transfer, { programAddress: randomAddress() }] as Instruction[],
    });
    await expectBoth(noMemo, {}, "invalid_exact_svm_payload_unknown_fourth_instruction");
  });

  it("allows 4 memos after the transfer in v2 but only 3 in v1; a required memo must be alone", async () => {
    const memo = (text: string): Instruction => ({
      programAddress: MEMO_PROGRAM as Address,
      data: new TextEncoder().encode(text),
    });
    const base = { payer, feePayer: feePayer.address, mint, payTo, amount: AMOUNT, blockhash };
    const seven = await buildPayment({ ...base, extra: [memo("a"), memo("b"), memo("c")] });
    await expectBoth(seven, {}, "valid");
    await expectBoth(seven, {}, "invalid_exact_svm_payload_transaction_instructions_length", 1);
    const two = await buildPayment({ ...base, memo: "order-42", extra: [memo("order-42")] });
    await expectBoth(two, { memo: "order-42" }, "invalid_exact_svm_payload_memo_count");
  });

  it("refuses a transfer that is not TransferChecked", async () => {
    const tx = await buildPayment({
      payer,
      feePayer: feePayer.address,
      mint,
      payTo,
      amount: AMOUNT,
      blockhash,
      transform: ([limit, price, transfer, memo]) => {
        const checked = transfer as Instruction & { data: Uint8Array };
        const plain = { ...checked, data: Uint8Array.from([3, ...checked.data.slice(1, 9)]) };
        return [limit, price, plain, memo] as Instruction[];
      },
    });
    await expectBoth(tx, {}, "invalid_exact_svm_payload_no_transfer_instruction");
  });

  describe("where we are stricter than the reference", () => {
    it("refuses our fee payer anywhere in the transfer or in any other instruction's accounts", async () => {
      const base = { payer, feePayer: feePayer.address, mint, payTo, amount: AMOUNT, blockhash };
      const asSource = await buildPayment({ ...base, source: feePayer.address });
      const mine = await ours(asSource, {}, 2);
      expect(mine.ok ? "valid" : mine.x402Reason).toBe(
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
      );
      expect((await officialVerdict(asSource, {}, 2)).isValid).toBe(true);

      const signingMemo = await buildPayment({
        ...base,
        extra: [
          {
            programAddress: MEMO_PROGRAM as Address,
            accounts: [{ address: feePayer.address, role: AccountRole.READONLY_SIGNER }],
            data: new TextEncoder().encode("hi"),
          },
        ],
      });
      const memoVerdict = await ours(signingMemo, {}, 2);
      expect(memoVerdict.ok ? "valid" : memoVerdict.x402Reason).toBe(
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
      );
      expect((await officialVerdict(signingMemo, {}, 2)).isValid).toBe(true);

      // A compute-budget instruction naming it: any instruction's accounts, not only the memos'.
      const namingLimit = await buildPayment({
        ...base,
        transform: (ixs) =>
          ixs.map((ix, i) =>
            i === 0
              ? { ...ix, accounts: [{ address: feePayer.address, role: AccountRole.READONLY }] }
              : ix,
          ),
      });
      const limitVerdict = await ours(namingLimit, {}, 2);
      expect(limitVerdict.ok ? "valid" : limitVerdict.x402Reason).toBe(
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
      );
      expect(limitVerdict.ok ? "" : limitVerdict.message).toMatch(/^Instruction 1 \(program/);
      expect((await officialVerdict(namingLimit, {}, 2)).isValid).toBe(true);
    });
  });

  it("answers a clean failure, never a throw, for transactions that do not decode", async () => {
    // The official facilitator logs each decoding error it catches.
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    const samples = [
      "not base64 at all!",
      "",
      Buffer.from("hello").toString("base64"),
      (await officialPayment()).slice(0, 120),
    ];
    for (const sample of samples) {
      await expectBoth(sample, {}, "invalid_exact_svm_payload_transaction_could_not_be_decoded");
    }
    for (const junk of [undefined, 42, { transaction: "x" }]) {
      const result = await checkSvmPayment(junk, requirementsV2(), {
        feePayers: [feePayer.address],
      });
      expect(result.ok ? "valid" : result.x402Reason).toBe(
        "invalid_exact_svm_payload_transaction_could_not_be_decoded",
      );
      expect(decodeSvmTransaction(junk).ok).toBe(false);
    }
    quiet.mockRestore();
  });

  it("the official client asked the stub RPC only for mints and (v1) the blockhash", () => {
    expect(new Set(rpc.served)).toEqual(new Set(["getAccountInfo", "getLatestBlockhash"]));
  });
});
