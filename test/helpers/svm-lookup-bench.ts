/**
 * The bench of the lookup-table tests: a Solana devnet, our facilitator with two fee payers (the
 * devnet's and a second one, never a transaction's), the official facilitator, and one lookup
 * table made on the devnet holding the accounts of payer 1's payments and a few more; payments
 * are the official client's, compressed with that table (test/helpers/svm-lookup.ts).
 */
import {
  type Address,
  type CompiledTransactionMessage,
  createKeyPairSignerFromBytes,
  type KeyPairSigner,
} from "@solana/kit";
import { Facilitator } from "../../src/facilitator.js";
import { svmFeePayerOf } from "../../src/svm/chain/keys.js";
import {
  associatedTokenAddress,
  type SvmDevKey,
  type SvmDevnet,
  secretKeyBytes,
  startSvmDevnet,
  svmDevKey,
} from "../../src/svm/devnet/index.js";
import { handlePost } from "./facilitator.js";
import { referenceSvmFacilitator, svmClientPayload, svmRequirementsV2 } from "./svm-devnet.js";
import { compressPayment, createLookupTable, rewritePayment } from "./svm-lookup.js";

// biome-ignore lint/suspicious/noExplicitAny: payloads of either shape.
type Payload = any;
export interface Payment {
  readonly payload: Payload;
  readonly requirements: ReturnType<typeof svmRequirementsV2>;
}

export interface PaymentOptions {
  readonly amount?: bigint;
  /** Who pays: payer 1 (the default) or payer 2, whose token accounts the table holds. */
  readonly from?: 1 | 2;
  /** Another table address to name instead (holding the same, or nothing). */
  readonly inTable?: Address;
  readonly edit?: (m: CompiledTransactionMessage) => CompiledTransactionMessage;
}

export interface LookupBench {
  readonly devnet: SvmDevnet;
  readonly ours: Facilitator;
  readonly reference: Awaited<ReturnType<typeof referenceSvmFacilitator>>;
  /** A second fee payer of ours, never a transaction's. */
  readonly otherFeePayer: SvmDevKey;
  /**
   * What `table` holds: payer 1's token account, the mint, the payee's token account, our two
   * fee payers, payer 2's token account.
   */
  readonly contents: readonly Address[];
  readonly table: Address;
  /** The official client's payment (payer 1's), source, mint and destination from the table. */
  payment(options?: PaymentOptions): Promise<Payment>;
  /** The official facilitator's verify, or what it throws. */
  officialVerify(p: Payment): Promise<unknown>;
  /** Ours, in both dialects, verify then settle. */
  oursVerdicts(p: Payment): Promise<
    Record<
      "verify" | "verifyX402" | "settle" | "settleX402",
      {
        status: number;
        body: Record<string, unknown>;
      }
    >
  >;
  stop(): Promise<void>;
}

export const signerOf = (key: SvmDevKey): Promise<KeyPairSigner> =>
  createKeyPairSignerFromBytes(secretKeyBytes(key));

export async function startLookupBench(): Promise<LookupBench> {
  const devnet = await startSvmDevnet({ slotMs: 100 });
  const otherFeePayer = svmDevKey("fee-payer-2");
  const keys = [devnet.feePayer, otherFeePayer].map((k) => svmFeePayerOf(k.secretKey));
  if (!keys[0] || !keys[1]) throw new Error("no fee payer key");
  const ours = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    svmFeePayers: [keys[0], keys[1]],
    receiptPollMs: 50,
  });
  const reference = await referenceSvmFacilitator(devnet);
  const [payer0, payer1, payer2] = devnet.payers as [SvmDevKey, SvmDevKey, SvmDevKey];
  const contents = [
    await associatedTokenAddress(payer1.address),
    devnet.mint.address,
    await associatedTokenAddress(devnet.payee.address),
    devnet.feePayer.address,
    otherFeePayer.address,
    await associatedTokenAddress(payer2.address),
  ];
  const table = await createLookupTable(devnet, payer0, contents);
  return {
    devnet,
    ours,
    reference,
    otherFeePayer,
    contents,
    table,
    async payment(options = {}) {
      const amount = String(options.amount ?? 1_000n);
      const requirements = svmRequirementsV2(devnet, { amount });
      const from = options.from === 2 ? payer2 : payer1;
      const made = await svmClientPayload(devnet, from, requirements);
      const signer = await signerOf(from);
      const original = made.payload.transaction as string;
      // Every non-signer account the table holds moves there: source, mint and destination.
      let transaction = await compressPayment(original, signer, options.inTable ?? table, contents);
      if (options.edit) transaction = await rewritePayment(transaction, signer, options.edit);
      return { payload: { ...made, payload: { transaction } }, requirements };
    },
    async officialVerify(p) {
      try {
        return await reference.verify(p.payload, p.requirements as never);
      } catch (error) {
        return {
          threw: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        };
      }
    },
    async oursVerdicts({ payload, requirements }) {
      const x402 = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
      const plain = { payload, requirements };
      return {
        verify: await handlePost(ours, "/verify", plain),
        verifyX402: await handlePost(ours, "/verify", x402),
        settle: await handlePost(ours, "/settle", plain),
        settleX402: await handlePost(ours, "/settle", x402),
      };
    },
    stop: () => devnet.stop(),
  };
}
