/**
 * Smart-wallet payers (issue 26, item 9), end to end on the local Solana devnet with nothing
 * mocked, beside the official @x402/svm 2.27 facilitator with `enableSmartWalletVerification`.
 * No wallet program (Squads, Swig, …) can be had here, so the allow-list is set to the SPL Token
 * program, which the devnet ships: a payment whose TransferChecked is not where the static layout
 * wants it (no compute-budget instructions; a memo before the transfer) fails the static layout
 * for a layout reason, then passes the smart-wallet path (its transfer is at the top level), is
 * settled for real and confirmed in the landed transaction. Crafted inner instructions, the
 * refusals and the post-settlement failure: test/svm-smart-wallet-parity.test.ts.
 */
import type { Address, Instruction } from "@solana/kit";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import { type SvmDevKey, type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { TOKEN_PROGRAM } from "../src/svm/exact/constants.js";
import { handlePost } from "./helpers/facilitator.js";
import { devnetPayment, svmLamports, svmTokenBalance } from "./helpers/svm-devnet.js";
import { signerOf } from "./helpers/svm-lookup-bench.js";

let devnet: SvmDevnet;
let ours: Facilitator;
let oursOff: Facilitator;
let official: ExactSvmFacilitator;
let officialOff: ExactSvmFacilitator;

const LIMITS = { maxComputeUnits: 400_000, maxPriorityFeeMicroLamports: 50_000n };

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("no fee payer key");
  const base = { rpcUrls: [devnet.rpcUrl], svmFeePayers: [key], receiptPollMs: 50 };
  ours = new Facilitator({
    ...base,
    svmSmartWallets: { allowedPrograms: [TOKEN_PROGRAM], ...LIMITS },
  });
  oursOff = new Facilitator(base);
  const signer = toFacilitatorSvmSigner(await signerOf(devnet.feePayer), {
    defaultRpcUrl: devnet.rpcUrl,
  });
  official = new ExactSvmFacilitator(signer, undefined, {
    enableSmartWalletVerification: true,
    smartWalletAllowedPrograms: [TOKEN_PROGRAM],
  });
  officialOff = new ExactSvmFacilitator(signer);
});

afterAll(async () => {
  await devnet?.stop();
});

const payer = (n: number) => devnet.payers[n] as SvmDevKey;
const payeeBalance = () => svmTokenBalance(devnet, devnet.payee.address);

/** The static layout's instructions: [limit, price, transfer, memo]. */
const shapes: {
  name: string;
  transform: (ixs: Instruction[]) => Instruction[];
  staticReason: string;
  /** What it costs our fee payer: two signatures, and the priority fee its budget asks. */
  fee: bigint;
}[] = [
  {
    name: "a lone TransferChecked and a memo, no compute budget",
    transform: (ixs) => ixs.slice(2),
    staticReason: "invalid_exact_svm_payload_transaction_instructions_length",
    fee: 10_000n,
  },
  {
    name: "the memo before the TransferChecked",
    transform: ([limit, price, transfer, memo]) => [limit, price, memo, transfer] as Instruction[],
    staticReason: "invalid_exact_svm_payload_no_transfer_instruction",
    // 20,000 units at 1 micro-lamport: 1 lamport.
    fee: 10_001n,
  },
];

describe("a payment the static layout refuses for its layout, through the smart-wallet path", () => {
  test.each(shapes)(
    "$name: verified by both, settled for real, the tokens move",
    async ({ transform, staticReason, fee }) => {
      const mine = await devnetPayment(devnet, payer(1), 1_000n, { transform });
      const theirs = await devnetPayment(devnet, payer(2), 1_000n, { transform });
      const requirements = mine.requirements as never;

      // Switched off, both refuse it for its layout, with the same reason.
      expect(await officialOff.verify(theirs.payload as never, requirements)).toMatchObject({
        isValid: false,
        invalidReason: staticReason,
      });
      const off = await handlePost(oursOff, "/verify", {
        x402Version: 2,
        paymentPayload: mine.payload,
        paymentRequirements: mine.requirements,
      });
      expect(off.body).toMatchObject({ isValid: false, invalidReason: staticReason });

      // Switched on: the official verdict, then ours.
      expect(await official.verify(theirs.payload as never, requirements)).toEqual({
        isValid: true,
        payer: payer(2).address,
      });
      const verified = await handlePost(ours, "/verify", {
        payload: mine.payload,
        requirements: mine.requirements,
      });
      expect(verified).toEqual({ status: 200, body: { success: true, payer: payer(1).address } });

      const [payee, source, lamports] = [
        await payeeBalance(),
        await svmTokenBalance(devnet, payer(1).address),
        await svmLamports(devnet, devnet.feePayer.address),
      ];
      const settled = await handlePost(ours, "/settle", {
        payload: mine.payload,
        requirements: mine.requirements,
      });
      expect(settled).toMatchObject({ status: 200, body: { success: true } });
      expect(await payeeBalance()).toBe(payee + 1_000n);
      expect(await svmTokenBalance(devnet, payer(1).address)).toBe(source - 1_000n);
      expect(lamports - (await svmLamports(devnet, devnet.feePayer.address))).toBe(fee);

      // The same transaction again: one success per transaction.
      const again = await handlePost(ours, "/settle", {
        x402Version: 2,
        paymentPayload: mine.payload,
        paymentRequirements: mine.requirements,
      });
      expect(again.body).toMatchObject({ success: false });
      expect(await payeeBalance()).toBe(payee + 1_000n);

      // The official facilitator settles its own; its post-settlement check reads the landed
      // transaction's inner instructions (jsonParsed, which this devnet does not answer), so it
      // falls back to the payee's balance difference, which shows the payment.
      const before = await payeeBalance();
      expect(await official.settle(theirs.payload as never, requirements)).toMatchObject({
        success: true,
      });
      expect(await payeeBalance()).toBe(before + 1_000n);
    },
  );
});

describe("still refused on the smart-wallet path", () => {
  test("a program outside the allow-list: the reference's reason", async () => {
    // Memo first, then a System program call the allow-list does not name.
    const system: Instruction = {
      programAddress: "11111111111111111111111111111111" as Address,
      accounts: [],
      data: Uint8Array.from([2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    };
    const transform = (ixs: Instruction[]) => [...ixs.slice(2), system];
    const mine = await devnetPayment(devnet, payer(1), 1_000n, { transform });
    const reason = "invalid_exact_svm_smart_wallet_program_not_allowed";
    const theirs = await official.verify(mine.payload as never, mine.requirements as never);
    expect(theirs.invalidReason?.startsWith(`${reason}: 11111111111111111111111111111111`)).toBe(
      true,
    );
    const v = await handlePost(ours, "/verify", {
      x402Version: 2,
      paymentPayload: mine.payload,
      paymentRequirements: mine.requirements,
    });
    expect(v.body).toMatchObject({ isValid: false, invalidReason: reason });
  });

  test("an unknown seventh instruction is not a layout reason the reference recovers from", async () => {
    const memo = (ixs: Instruction[]) => ixs[3] as Instruction;
    const transform = (ixs: Instruction[]) => [
      ...ixs,
      memo(ixs),
      memo(ixs),
      { ...memo(ixs), programAddress: TOKEN_PROGRAM as Address },
    ];
    const mine = await devnetPayment(devnet, payer(1), 1_000n, { transform });
    const reason = "invalid_exact_svm_payload_unknown_seventh_instruction";
    expect(await official.verify(mine.payload as never, mine.requirements as never)).toMatchObject({
      isValid: false,
      invalidReason: reason,
    });
    const v = await handlePost(ours, "/verify", {
      x402Version: 2,
      paymentPayload: mine.payload,
      paymentRequirements: mine.requirements,
    });
    expect(v.body).toMatchObject({ isValid: false, invalidReason: reason });
  });
});

describe("/supported", () => {
  test("lists extra.features.smartWalletSupported on the x402 v2 Solana kind only when on", async () => {
    const kinds = async (f: Facilitator) => (await f.supported()).kinds;
    const on = (await kinds(ours)).filter((k) => k.network.startsWith("solana"));
    const off = (await kinds(oursOff)).filter((k) => k.network.startsWith("solana"));
    expect(on.find((k) => k.x402Version === 2)?.extra).toMatchObject({
      features: { smartWalletSupported: true },
    });
    expect(on.find((k) => k.x402Version === 1)?.extra).not.toHaveProperty("features");
    for (const kind of off) expect(kind.extra).not.toHaveProperty("features");
    // As the official scheme says it when its path is on.
    expect(official.getExtra(devnet.network)).toMatchObject({
      features: { smartWalletSupported: true },
    });
  });
});
