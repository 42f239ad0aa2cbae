/**
 * Solana transaction versions (issue 26, item 7), on the local Solana devnet beside the official
 * @x402/svm 2.27 facilitator. `/supported` lists `extra.transactionVersions: [0]` on each Solana
 * kind, as the upstream change after 2.27 does; a payment whose message is of another version is
 * refused as `unsupported_transaction_version` at verify and settle, and nothing is sent; a legacy
 * message is still taken, as 2.27 takes it (upstream keeps taking it too, never advertising it).
 *
 * The payments are the official client's layout (test/helpers/svm-build.ts) in each message
 * version; the official client itself builds version 0 only. Before, ours refused versions 1 and
 * up as `invalid_request` (x402 `…_could_not_be_decoded`); 2.27 refuses them with the reasons
 * each case names, one of them misleading (a version 1 transaction "has no transfer").
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import { type SvmDevKey, type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import {
  devnetPayment,
  referenceSvmFacilitator,
  svmLamports,
  svmTokenBalance,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let ours: Facilitator;
let reference: Awaited<ReturnType<typeof referenceSvmFacilitator>>;

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
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
type Payment = Awaited<ReturnType<typeof devnetPayment>>;

const payer = (n: number) => devnet.payers[n] as SvmDevKey;

/** The payment with its message's version byte (the one after the signatures) set to `byte`. */
function withVersionByte(p: Payment, byte: number): Payment {
  const wire = Buffer.from(p.payload.payload.transaction, "base64");
  // One byte of signature count here (2 signatures): the message starts after them.
  wire[1 + (wire[0] as number) * 64] = byte;
  const transaction = wire.toString("base64");
  return { ...p, payload: { ...p.payload, payload: { transaction } } };
}

/** Verify and settle in both of our dialects, and the official verify, of one payment. */
async function verdicts({
  payload,
  requirements,
}: {
  payload: Payload;
  requirements: Payment["requirements"];
}) {
  const x402 = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
  const plain = { payload, requirements };
  return {
    official: await reference.verify(payload, requirements as never),
    verify: await handlePost(ours, "/verify", plain),
    verifyX402: await handlePost(ours, "/verify", x402),
    settle: await handlePost(ours, "/settle", plain),
    settleX402: await handlePost(ours, "/settle", x402),
  };
}

describe("/supported", () => {
  test("lists extra.transactionVersions [0] on every Solana kind, beside the fee payer", async () => {
    const answer = await createHandler(ours)({
      method: "GET",
      url: "/supported",
      headers: {},
      body: Buffer.alloc(0),
    });
    const feePayer = devnet.feePayer.address;
    const extra = { feePayer, transactionVersions: [0] };
    expect(JSON.parse(answer.body).kinds).toEqual([
      { x402Version: 1, scheme: "exact", network: "solana-devnet", extra },
      { x402Version: 2, scheme: "exact", network: devnet.network, extra },
    ]);
  });
});

const payeeBalance = () => svmTokenBalance(devnet, devnet.payee.address);
const feePayerLamports = () => svmLamports(devnet, devnet.feePayer.address);

interface Refused {
  readonly name: string;
  readonly version: number;
  readonly make: () => Promise<Payment>;
  /** What the official 2.27 facilitator answers (it has no version gate yet). */
  readonly official: string;
}

const refused: Refused[] = [
  {
    name: "a version 1 transaction (SIMD-0385: the message first, then the signatures)",
    version: 1,
    make: () => devnetPayment(devnet, payer(0), 100n, { version: 1 }),
    // 2.27's kit decodes it and reads its instructions in the v0 layout: no transfer found.
    official: "invalid_exact_svm_payload_no_transfer_instruction",
  },
  {
    name: "a version 1 message behind the signatures",
    version: 1,
    make: async () => withVersionByte(await devnetPayment(devnet, payer(0), 100n), 0x81),
    // 2.27's kit refuses a version 1 message in the signatures-first envelope.
    official: "invalid_exact_svm_payload_transaction_could_not_be_decoded",
  },
  {
    name: "a version 5 message",
    version: 5,
    make: async () => withVersionByte(await devnetPayment(devnet, payer(0), 100n), 0x85),
    // Past the kit's highest version (1).
    official: "invalid_exact_svm_payload_transaction_could_not_be_decoded",
  },
];

describe("a message of another version than 0 or legacy", () => {
  test.each(refused)(
    "$name: unsupported_transaction_version at verify and settle, in both dialects; nothing is sent",
    async ({ make, version, official }) => {
      const payment = await make();
      const [payee, lamports] = [await payeeBalance(), await feePayerLamports()];
      const v = await verdicts(payment);
      expect(v.official).toMatchObject({ isValid: false, invalidReason: official });
      const message = expect.stringContaining(`version ${version} message`);
      for (const answer of [v.verify, v.settle]) {
        expect(answer).toEqual({
          status: 400,
          body: { success: false, error: "unsupported_transaction_version", message },
        });
      }
      expect(v.verifyX402.body).toEqual({
        isValid: false,
        invalidReason: "unsupported_transaction_version",
        invalidMessage: message,
      });
      expect(v.settleX402.body).toMatchObject({
        success: false,
        errorReason: "unsupported_transaction_version",
        transaction: "",
      });
      expect(await payeeBalance()).toBe(payee);
      expect(await feePayerLamports()).toBe(lamports);
    },
  );

  test("in an x402 v1 payment on solana-devnet too", async () => {
    const { payload, requirements } = await devnetPayment(devnet, payer(0), 100n, { version: 1 });
    const { status, body } = await handlePost(ours, "/verify", {
      x402Version: 1,
      paymentPayload: {
        x402Version: 1,
        scheme: "exact",
        network: "solana-devnet",
        payload: payload.payload,
      },
      paymentRequirements: {
        scheme: "exact",
        network: "solana-devnet",
        maxAmountRequired: requirements.amount,
        resource: "http://localhost/paid",
        description: "",
        mimeType: "application/json",
        payTo: requirements.payTo,
        maxTimeoutSeconds: 300,
        asset: requirements.asset,
        extra: requirements.extra,
      },
    });
    expect({ status, body }).toMatchObject({
      status: 200,
      body: { isValid: false, invalidReason: "unsupported_transaction_version" },
    });
  });
});

describe("a legacy message: still taken, as the official 2.27 facilitator takes it", () => {
  test("both verify it and settle it", async () => {
    const [mine, theirs] = [
      await devnetPayment(devnet, payer(1), 1_000n, { version: "legacy" }),
      await devnetPayment(devnet, payer(1), 1_000n, { version: "legacy" }),
    ];
    const before = await payeeBalance();
    expect(await reference.verify(theirs.payload, theirs.requirements as never)).toMatchObject({
      isValid: true,
      payer: payer(1).address,
    });
    expect(await reference.settle(theirs.payload, theirs.requirements as never)).toMatchObject({
      success: true,
    });
    const v = await handlePost(ours, "/verify", mine);
    expect(v).toEqual({ status: 200, body: { success: true, payer: payer(1).address } });
    const s = await handlePost(ours, "/settle", mine);
    expect(s).toMatchObject({ status: 200, body: { success: true } });
    expect(await payeeBalance()).toBe(before + 2_000n);
  });
});
