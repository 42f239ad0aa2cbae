/**
 * Token-2022 mints (issue 26, item 8), on the local Solana devnet beside the official @x402/svm
 * 2.27 facilitator. The devnet holds a Token-2022 test token (6 decimals, no extensions; litesvm
 * runs the Token-2022 program itself) beside its SPL Token USDC, and the official client pays in
 * it: it reads the mint's owner and makes the TransferChecked of the Token-2022 program, to the
 * payee's associated account derived under that program. Ours checked such transfers as SPL Token
 * ones before, but no test ran one on a cluster; here each is verified and settled by both, and
 * refused by both for the same reasons, and nothing they refuse moves a token.
 */
import type { Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { associatedTokenAddress } from "../src/svm/exact/ata.js";
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from "../src/svm/exact/constants.js";
import { decodeSvmTransaction } from "../src/svm/exact/decode.js";
import { readTransferChecked } from "../src/svm/exact/instructions.js";
import { handlePost } from "./helpers/facilitator.js";
import {
  devnetPayment,
  referenceSvmFacilitator,
  svmClientPayload,
  svmLamports,
  svmRequirementsV2,
  svmTokenBalance,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let ours: Facilitator;
let reference: Awaited<ReturnType<typeof referenceSvmFacilitator>>;

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100, payers: 4 });
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("no fee payer key");
  ours = new Facilitator({ rpcUrls: [devnet.rpcUrl], svmFeePayers: [key], receiptPollMs: 50 });
  reference = await referenceSvmFacilitator(devnet);
});

afterAll(async () => {
  await devnet?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: payloads of either shape.
type Payload = any;
type Requirements = ReturnType<typeof svmRequirementsV2>;

const payer = (n: number) => devnet.payers[n] as SvmDevKey;
const token2022 = () => ({ mint: devnet.token2022.address, program: TOKEN_2022_PROGRAM });
const balance2022 = (owner: string) => svmTokenBalance(devnet, owner, "processed", token2022());
const usdc = (owner: string) => svmTokenBalance(devnet, owner);
const feePayerLamports = () => svmLamports(devnet, devnet.feePayer.address);

/** Requirements for the Token-2022 test token. */
function requirements2022(amount: bigint, overrides: { payTo?: string; asset?: string } = {}) {
  return svmRequirementsV2(devnet, {
    amount: amount.toString(),
    asset: devnet.token2022.address,
    ...overrides,
  });
}

/** The official client's payment for `requirements`. */
async function officialPayment(from: SvmDevKey, requirements: Requirements) {
  return { payload: await svmClientPayload(devnet, from, requirements), requirements };
}

async function oursVerdicts(payload: Payload, requirements: Requirements) {
  const x402 = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
  const plain = { payload, requirements };
  return {
    verify: await handlePost(ours, "/verify", plain),
    verifyX402: await handlePost(ours, "/verify", x402),
    settle: await handlePost(ours, "/settle", plain),
    settleX402: await handlePost(ours, "/settle", x402),
  };
}

describe("a payment in a Token-2022 mint", () => {
  test("the devnet's Token-2022 token: a mint of that program, payers funded", async () => {
    const mint = devnet.cluster.svm.getAccount(devnet.token2022.address);
    expect(mint.exists && mint.programAddress).toBe(TOKEN_2022_PROGRAM);
    expect(devnet.token2022.decimals).toBe(6);
    expect(await balance2022(payer(0).address)).toBe(PAYER_USDC_BALANCE);
    expect(await balance2022(devnet.payee.address)).toBe(0n);
  });

  test("made by the official client, verified and settled by both: the tokens move", async () => {
    const mine = await officialPayment(payer(0), requirements2022(1_500n));
    const theirs = await officialPayment(payer(0), requirements2022(2_500n));
    const decoded = decodeSvmTransaction(mine.payload.payload.transaction);
    if (!decoded.ok) throw new Error(decoded.message);
    const transfer = decoded.transaction.instructions[2];
    const read = transfer && readTransferChecked(transfer);
    expect(read).toMatchObject({
      tokenProgram: TOKEN_2022_PROGRAM,
      mint: devnet.token2022.address,
      amount: 1_500n,
      decimals: 6,
      destination: await associatedTokenAddress(
        devnet.payee.address,
        devnet.token2022.address,
        TOKEN_2022_PROGRAM,
      ),
    });
    const [payee, source, payeeUsdc] = [
      await balance2022(devnet.payee.address),
      await balance2022(payer(0).address),
      await usdc(devnet.payee.address),
    ];

    expect(await reference.verify(theirs.payload, theirs.requirements as never)).toEqual({
      isValid: true,
      payer: payer(0).address,
    });
    expect(await reference.settle(theirs.payload, theirs.requirements as never)).toMatchObject({
      success: true,
    });

    const lamports = await feePayerLamports();
    const v = await oursVerdicts(mine.payload, mine.requirements);
    expect(v.verify).toEqual({ status: 200, body: { success: true, payer: payer(0).address } });
    expect(v.verifyX402.body).toEqual({ isValid: true, payer: payer(0).address });
    expect(v.settle).toMatchObject({ status: 200, body: { success: true } });
    expect(v.settleX402.body).toMatchObject({
      success: false,
      errorReason: "duplicate_settlement",
    });
    expect(await balance2022(devnet.payee.address)).toBe(payee + 4_000n);
    expect(await balance2022(payer(0).address)).toBe(source - 4_000n);
    expect(await usdc(devnet.payee.address)).toBe(payeeUsdc);
    // The official client's fee: two signatures and its compute budget, as for SPL Token.
    expect(await feePayerLamports()).toBe(lamports - 10_001n);
  });

  test("a payer signing many payments of its whole balance at once: one is paid", async () => {
    // The in-flight ledger reads the Token-2022 account as it reads an SPL Token one.
    const from = payer(3);
    const whole = await balance2022(from.address);
    const payments = await Promise.all(
      Array.from({ length: 6 }, () => officialPayment(from, requirements2022(whole))),
    );
    const lamports = await feePayerLamports();
    const answers = await Promise.all(
      payments.map(({ payload, requirements }) =>
        handlePost(ours, "/settle", { payload, requirements }),
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
    expect(await balance2022(from.address)).toBe(0n);
    expect(await feePayerLamports()).toBe(lamports - 10_001n);
  });
});

interface Refused {
  readonly name: string;
  readonly make: () => Promise<{ payload: Payload; requirements: Requirements }>;
  readonly reason: string;
  readonly code: string;
}

const refused: Refused[] = [
  {
    name: "wrong amount: the requirements ask for more than the transfer moves",
    make: async () => {
      const p = await officialPayment(payer(1), requirements2022(100n));
      return { ...p, requirements: requirements2022(101n) };
    },
    reason: "invalid_exact_svm_payload_amount_mismatch",
    code: "amount_mismatch",
  },
  {
    name: "wrong destination: the requirements pay another wallet",
    make: async () => {
      const p = await officialPayment(payer(1), requirements2022(100n));
      return { ...p, requirements: requirements2022(100n, { payTo: payer(2).address }) };
    },
    reason: "invalid_exact_svm_payload_recipient_mismatch",
    code: "recipient_mismatch",
  },
  {
    name: "wrong destination: the payee's account derived under SPL Token, not Token-2022",
    make: async () => {
      const wrong = await associatedTokenAddress(
        devnet.payee.address,
        devnet.token2022.address,
        TOKEN_PROGRAM,
      );
      const p = await devnetPayment(devnet, payer(1), 100n, {
        mint: devnet.token2022.address,
        tokenProgram: TOKEN_2022_PROGRAM as Address,
        transform: (ixs) => {
          const transfer = ixs[2];
          const accounts = [...(transfer?.accounts ?? [])];
          accounts[2] = { ...(accounts[2] as (typeof accounts)[0]), address: wrong as Address };
          return ixs.map((ix, i) => (i === 2 ? { ...ix, accounts } : ix));
        },
      });
      return { ...p, requirements: requirements2022(100n) };
    },
    reason: "invalid_exact_svm_payload_recipient_mismatch",
    code: "recipient_mismatch",
  },
  {
    name: "wrong mint: a Token-2022 payment for requirements in USDC",
    make: async () => {
      const p = await officialPayment(payer(1), requirements2022(100n));
      return { ...p, requirements: svmRequirementsV2(devnet, { amount: "100" }) };
    },
    reason: "invalid_exact_svm_payload_mint_mismatch",
    code: "asset_mismatch",
  },
  {
    name: "wrong mint: a USDC payment for requirements in the Token-2022 token",
    make: async () => {
      const usdcRequirements = svmRequirementsV2(devnet, { amount: "100" });
      const p = await officialPayment(payer(1), usdcRequirements);
      return { ...p, requirements: requirements2022(100n) };
    },
    reason: "invalid_exact_svm_payload_mint_mismatch",
    code: "asset_mismatch",
  },
];

describe("refused by both for the same reason, nothing moved", () => {
  test.each(refused)("$name", async ({ make, reason, code }) => {
    const { payload, requirements } = await make();
    expect(await reference.verify(payload, requirements as never)).toMatchObject({
      isValid: false,
      invalidReason: reason,
      payer: payer(1).address,
    });
    const [source, lamports] = [await balance2022(payer(1).address), await feePayerLamports()];
    const v = await oursVerdicts(payload, requirements);
    for (const answer of [v.verify, v.settle]) {
      expect(answer).toMatchObject({ status: 400, body: { success: false, error: code } });
    }
    expect(v.verifyX402.body).toMatchObject({
      isValid: false,
      invalidReason: reason,
      payer: payer(1).address,
    });
    expect(v.settleX402.body).toMatchObject({ success: false, errorReason: reason });
    expect(await reference.settle(payload, requirements as never)).toMatchObject({
      success: false,
      errorReason: reason,
    });
    expect(await balance2022(payer(1).address)).toBe(source);
    expect(await usdc(payer(1).address)).toBe(PAYER_USDC_BALANCE);
    expect(await feePayerLamports()).toBe(lamports);
  });
});
