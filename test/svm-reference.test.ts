/**
 * Settle verdicts beside the official @x402/svm 2.27 facilitator, on one local Solana devnet:
 * each case is settled by both (x402 dialect for ours), and the reasons must agree, except where
 * we deliberately differ (said in the case). Nothing either refuses may move tokens.
 */
import { AccountRole, type Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import { randomAddress } from "./helpers/svm-build.js";
import {
  devnetPayment,
  referenceSvmFacilitator,
  svmClientPayload,
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
type Requirements = ReturnType<typeof svmRequirementsV2> & { extra: Record<string, unknown> };

async function oursSettle(payload: Payload, requirements: Requirements) {
  const { body } = await handlePost(ours, "/settle", {
    x402Version: 2,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });
  return body as { success: boolean; errorReason?: string };
}

const payeeBalance = () => svmTokenBalance(devnet, devnet.payee.address);

function payer(n: number): SvmDevKey {
  return devnet.payers[n] as SvmDevKey;
}

interface Case {
  readonly name: string;
  readonly make: () => Promise<{ payload: Payload; requirements: Requirements }>;
  readonly reason: string;
}

const refused: Case[] = [
  {
    name: "wrong amount",
    reason: "invalid_exact_svm_payload_amount_mismatch",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n);
      return { ...p, requirements: { ...p.requirements, amount: "101" } };
    },
  },
  {
    name: "wrong mint",
    reason: "invalid_exact_svm_payload_mint_mismatch",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n);
      return { ...p, requirements: { ...p.requirements, asset: randomAddress() } };
    },
  },
  {
    name: "wrong payee",
    reason: "invalid_exact_svm_payload_recipient_mismatch",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n);
      return { ...p, requirements: { ...p.requirements, payTo: randomAddress() } };
    },
  },
  {
    name: "more than the payer holds",
    reason: "invalid_exact_svm_transaction_simulation_failed",
    make: () => devnetPayment(devnet, payer(0), PAYER_USDC_BALANCE + 1n),
  },
  {
    name: "an extra instruction that spends the fee payer's SOL",
    reason: "invalid_exact_svm_payload_unknown_fifth_instruction",
    make: () =>
      devnetPayment(devnet, payer(0), 100n, {
        extra: [
          {
            programAddress: "11111111111111111111111111111111" as Address,
            accounts: [
              { address: devnet.feePayer.address, role: AccountRole.WRITABLE_SIGNER },
              { address: payer(0).address, role: AccountRole.WRITABLE },
            ],
            // System transfer (2) of 1,000,000 lamports.
            data: Uint8Array.from([2, 0, 0, 0, 64, 66, 15, 0, 0, 0, 0, 0]),
          },
        ],
      }),
  },
  {
    name: "compute-unit price above the cap",
    reason: "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high",
    make: () => devnetPayment(devnet, payer(0), 100n, { microLamports: 5_000_001n }),
  },
  {
    name: "a fee payer that is not ours",
    reason: "invalid_exact_svm_fee_payer_not_managed_by_facilitator",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n);
      return {
        ...p,
        requirements: { ...p.requirements, extra: { feePayer: payer(1).address } },
      };
    },
  },
  {
    name: "a memo other than the one asked for",
    reason: "invalid_exact_svm_payload_memo_mismatch",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n, { memo: "order-1" });
      return {
        ...p,
        requirements: { ...p.requirements, extra: { ...p.requirements.extra, memo: "order-2" } },
      };
    },
  },
  {
    name: "an expired blockhash",
    reason: "invalid_exact_svm_transaction_simulation_failed",
    make: async () => {
      const p = await devnetPayment(devnet, payer(0), 100n);
      for (let i = 0; i < 160; i++) devnet.cluster.tick();
      return p;
    },
  },
];

describe("settle beside the official facilitator", () => {
  test.each(refused)("$name: both refuse with $reason, nothing moves", async ({ make, reason }) => {
    const { payload, requirements } = await make();
    const before = await payeeBalance();
    const [official, answer] = [
      await reference.settle(payload, requirements as never),
      await oursSettle(payload, requirements),
    ];
    expect(official).toMatchObject({ success: false, errorReason: reason });
    expect(answer).toMatchObject({ success: false, errorReason: reason });
    expect(await payeeBalance()).toBe(before);
  });

  test("valid v2 payments: both settle, each its own", async () => {
    const requirements = svmRequirementsV2(devnet, { amount: "1000" });
    const [a, b] = await Promise.all([
      svmClientPayload(devnet, payer(2), requirements),
      svmClientPayload(devnet, payer(2), requirements),
    ]);
    const before = await payeeBalance();
    expect(await reference.settle(a, requirements as never)).toMatchObject({ success: true });
    expect(await oursSettle(b, requirements)).toMatchObject({ success: true });
    expect(await payeeBalance()).toBe(before + 2_000n);
  });

  test("5 concurrent settles of one transaction: one success each, the rest duplicate_settlement", async () => {
    const requirements = svmRequirementsV2(devnet, { amount: "10" });
    const [a, b] = await Promise.all([
      svmClientPayload(devnet, payer(3), requirements),
      svmClientPayload(devnet, payer(3), requirements),
    ]);
    const before = await payeeBalance();
    const official = await Promise.all(
      Array.from({ length: 5 }, () => reference.settle(a, requirements as never)),
    );
    const answers = await Promise.all(Array.from({ length: 5 }, () => oursSettle(b, requirements)));
    for (const verdicts of [official, answers]) {
      expect(verdicts.filter((v) => v.success)).toHaveLength(1);
      expect(verdicts.filter((v) => !v.success).map((v) => v.errorReason)).toEqual(
        Array(4).fill("duplicate_settlement"),
      );
    }
    expect(await payeeBalance()).toBe(before + 20n);
  });

  test("a replay once settled: we say duplicate_settlement, the official facilitator (cache passed) its simulation failing", async () => {
    const requirements = svmRequirementsV2(devnet, { amount: "11" });
    const payload = await svmClientPayload(devnet, payer(3), requirements);
    expect(await oursSettle(payload, requirements)).toMatchObject({ success: true });
    const fresh = await referenceSvmFacilitator(devnet);
    // Deliberately different: both refuse, ours says why.
    expect(await fresh.settle(payload, requirements as never)).toMatchObject({
      success: false,
      errorReason: "invalid_exact_svm_transaction_simulation_failed",
    });
    expect(await oursSettle(payload, requirements)).toMatchObject({
      success: false,
      errorReason: "duplicate_settlement",
    });
  });
});
