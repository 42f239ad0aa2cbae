/**
 * Smart-wallet payers (issue 26, item 9): verdict parity with the official @x402/svm 2.27
 * facilitator (`enableSmartWalletVerification`) on payments that call Squads Multisig v4.
 *
 * Mocked, and why: no Squads (or Swig) program binary can be had here, so the devnet cannot run
 * one. A JSON-RPC proxy in front of the devnet answers `simulateTransaction` for these payments
 * with crafted inner instructions (as a node that ran the wallet program would list them), and,
 * for the settles, the send, the signature status and the confirmed transaction; everything else
 * (blockhashes, balances, lookups) is the devnet's. Ours and the official scheme read the same
 * proxy. The official exported checks (`extractTransfersFromInnerInstructions`,
 * `assertFeePayerIsolated`, `assertSmartWalletLimits`) are held to ours too. The path with a real
 * settle and nothing mocked: test/svm-smart-wallet-settle.test.ts.
 */
import { randomBytes } from "node:crypto";
import {
  AccountRole,
  type Address,
  getBase58Decoder,
  getTransactionDecoder,
  type Instruction,
} from "@solana/kit";
import {
  assertFeePayerIsolated,
  assertSmartWalletLimits,
  extractTransfersFromInnerInstructions,
  toFacilitatorSvmSigner,
} from "@x402/svm";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { reconcileOnce } from "../src/core/reconciler.js";
import type { JournalEntry } from "../src/core/store.js";
import { Facilitator } from "../src/facilitator.js";
import { Journal } from "../src/store/journal.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  associatedTokenAddress,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { decodeSvmTransaction } from "../src/svm/exact/decode.js";
import { checkSmartWalletShape } from "../src/svm/exact/smart-wallet.js";
import { innerTransfers } from "../src/svm/exact/transfers.js";
import { handlePost } from "./helpers/facilitator.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { randomAddress } from "./helpers/svm-build.js";
import { devnetPayment } from "./helpers/svm-devnet.js";
import { signerOf } from "./helpers/svm-lookup-bench.js";

const SQUADS = "SQDS4ep65T869zMMBKyuUq6aD6EgTu8psMjkvj52pCf" as Address;
const TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const LIMITS = { maxComputeUnits: 400_000, maxPriorityFeeMicroLamports: 50_000n };
const DEFAULT_PROGRAMS = [
  SQUADS,
  "SMRTzfY6DfH5ik3TKiyLFfXexV8uSG3d2UksSCYdunG",
  "SWiGmQedKzMz1tiTqoJCWeGDnGXfNBp2PkXLkpCAtQo",
  "swigypWHEksbC64pWKwah1WTeh9JXwx8H1rJHLdbQMB",
  "GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw",
  "CoREENxT6tW1HoK8ypY1SxRMZTcVPm7R94rH4PZNhX7d",
  "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95",
];

let devnet: SvmDevnet;
let proxy: RpcProxy;
let journal: Journal;
let ours: Facilitator;
let oursOff: Facilitator;
let official: ExactSvmFacilitator;
let officialOff: ExactSvmFacilitator;
/** The vault's token account (payer 1's, so the devnet has its balance) and the payee's. */
let source: string;
let payeeAta: string;

/** What the proxy answers for a Squads payment's simulation: inner instructions, or an error. */
let simulated: { inner: unknown } | { err: unknown } = { inner: [] };
/** Settles: signatures the proxy "sent", and what their confirmed transaction lists inside. */
const sent = new Map<string, string>();
let confirmedInner: unknown = [];
let confirmedVisible = true;

const payer = (n: number) => devnet.payers[n] as SvmDevKey;

function callsSquads(params: unknown): boolean {
  const wire = Array.isArray(params) ? params[0] : undefined;
  const decoded = decodeSvmTransaction(wire);
  return decoded.ok && decoded.transaction.staticAccounts.includes(SQUADS);
}

function signatureOf(wire: string): string {
  const tx = getTransactionDecoder().decode(Buffer.from(wire, "base64"));
  return getBase58Decoder().decode(Object.values(tx.signatures)[0] as Uint8Array);
}

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
  proxy = await startRpcProxy(devnet.rpcUrl);
  proxy.intercept = (method, params) => {
    const list = params as unknown[];
    if (method === "simulateTransaction" && callsSquads(params)) {
      const value =
        "err" in simulated
          ? { err: simulated.err, logs: [], accounts: null, unitsConsumed: 0, returnData: null }
          : {
              err: null,
              logs: [],
              accounts: null,
              unitsConsumed: 30_000,
              returnData: null,
              innerInstructions: simulated.inner,
            };
      return { swallow: { context: { slot: 1 }, value } };
    }
    if (method === "sendTransaction" && callsSquads(params)) {
      const wire = list[0] as string;
      sent.set(signatureOf(wire), wire);
      return { swallow: signatureOf(wire) };
    }
    if (method === "getSignatureStatuses") {
      const asked = list[0] as string[];
      if (!asked.some((s) => sent.has(s))) return undefined;
      const value = asked.map((s) =>
        sent.has(s)
          ? { slot: 5, confirmations: 1, err: null, confirmationStatus: "confirmed" }
          : null,
      );
      return { swallow: { context: { slot: 5 }, value } };
    }
    if (method === "getTransaction" && sent.has(list[0] as string)) {
      if (!confirmedVisible) return { swallow: null };
      const wire = sent.get(list[0] as string) as string;
      return {
        swallow: {
          slot: 5,
          blockTime: 1,
          version: 0,
          transaction: [wire, "base64"],
          meta: {
            err: null,
            fee: 10_000,
            innerInstructions: confirmedInner,
            loadedAddresses: { writable: [], readonly: [] },
            preTokenBalances: [],
            postTokenBalances: [],
          },
        },
      };
    }
    return undefined;
  };
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("no fee payer key");
  journal = new Journal();
  const base = {
    rpcUrls: [proxy.url],
    svmFeePayers: [key],
    receiptPollMs: 50,
    confirmTimeoutMs: 2_000,
    journal,
  };
  ours = new Facilitator({
    ...base,
    svmSmartWallets: { allowedPrograms: DEFAULT_PROGRAMS, ...LIMITS },
  });
  oursOff = new Facilitator({ ...base, journal: new Journal() });
  const signer = toFacilitatorSvmSigner(await signerOf(devnet.feePayer), {
    defaultRpcUrl: proxy.url,
  });
  official = new ExactSvmFacilitator(signer, undefined, { enableSmartWalletVerification: true });
  officialOff = new ExactSvmFacilitator(signer);
  source = (await associatedTokenAddress(payer(1).address)) as string;
  payeeAta = (await associatedTokenAddress(devnet.payee.address)) as string;
});

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

interface Shape {
  /** Extra accounts of the Squads instruction (the fee payer, to test its isolation). */
  readonly squadsAccounts?: readonly Address[];
  /** Replaces the two compute-budget instructions' data. */
  readonly limitData?: Uint8Array;
  readonly priceData?: Uint8Array;
  readonly units?: number;
  readonly microLamports?: bigint;
  readonly program?: Address;
  readonly memo?: string;
  readonly amount?: bigint;
}

/**
 * A vault payment as a Squads client would make it: compute budget, a Squads instruction naming
 * the vault's token account, the mint, the payee's token account and the token program (the
 * transfer it makes happens inside), a memo. Signed by payer 1 as the member.
 */
async function squadsPayment(shape: Shape = {}) {
  const transform = (ixs: Instruction[]): Instruction[] => {
    const [limit, price, , memo] = ixs as [Instruction, Instruction, Instruction, Instruction];
    const member = (ixs[2]?.accounts ?? [])[3];
    const squads: Instruction = {
      programAddress: shape.program ?? SQUADS,
      accounts: [
        ...(member ? [member] : []),
        { address: source as Address, role: AccountRole.WRITABLE },
        { address: devnet.mint.address as Address, role: AccountRole.READONLY },
        { address: payeeAta as Address, role: AccountRole.WRITABLE },
        { address: TOKEN as Address, role: AccountRole.READONLY },
        ...(shape.squadsAccounts ?? []).map((address) => ({
          address,
          role: AccountRole.READONLY,
        })),
      ],
      data: Uint8Array.from(randomBytes(8)),
    };
    return [
      shape.limitData ? { ...limit, data: shape.limitData } : limit,
      shape.priceData ? { ...price, data: shape.priceData } : price,
      squads,
      memo,
    ];
  };
  const made = await devnetPayment(devnet, payer(1), shape.amount ?? 1_000n, {
    transform,
    ...(shape.units !== undefined ? { computeUnits: shape.units } : {}),
    ...(shape.microLamports !== undefined ? { microLamports: shape.microLamports } : {}),
    ...(shape.memo !== undefined ? { memo: shape.memo } : {}),
  });
  return made;
}

/** A TransferChecked inside, as a node lists it parsed (the form a simulation answers with). */
function parsed(t: { mint?: string; destination?: string; amount?: bigint; authority?: string }) {
  return {
    programId: TOKEN,
    program: "spl-token",
    stackHeight: 2,
    parsed: {
      type: "transferChecked",
      info: {
        source,
        mint: t.mint ?? devnet.mint.address,
        destination: t.destination ?? payeeAta,
        authority: t.authority ?? randomVault,
        tokenAmount: { amount: String(t.amount ?? 1_000n), decimals: 6 },
      },
    },
  };
}

const randomVault = randomAddress();
const group = (...instructions: unknown[]) => [{ index: 2, instructions }];

interface Case {
  readonly name: string;
  readonly shape?: Shape;
  readonly memo?: string;
  readonly sim?: () => typeof simulated;
  /** The official reason (a prefix: it appends details), or valid. */
  readonly reason: string | "valid";
  readonly code?: string;
}

const cases: Case[] = [
  {
    name: "one matching transfer inside",
    sim: () => ({ inner: group(parsed({})) }),
    reason: "valid",
  },
  {
    name: "a transfer of more than the amount",
    sim: () => ({ inner: group(parsed({ amount: 5_000n })) }),
    reason: "valid",
  },
  {
    name: "a transfer of another mint",
    sim: () => ({ inner: group(parsed({ mint: randomAddress() })) }),
    reason: "invalid_exact_svm_smart_wallet_transfer_mismatch",
    code: "asset_mismatch",
  },
  {
    name: "a transfer to another account",
    sim: () => ({ inner: group(parsed({ destination: source })) }),
    reason: "invalid_exact_svm_smart_wallet_transfer_mismatch",
    code: "recipient_mismatch",
  },
  {
    name: "a transfer of less than the amount",
    sim: () => ({ inner: group(parsed({ amount: 999n })) }),
    reason: "invalid_exact_svm_smart_wallet_transfer_mismatch",
    code: "amount_mismatch",
  },
  {
    name: "two matching transfers",
    sim: () => ({ inner: group(parsed({}), parsed({})) }),
    reason: "invalid_exact_svm_smart_wallet_multiple_matching_transfers",
    code: "unexpected_instructions",
  },
  {
    name: "no transfer at all",
    sim: () => ({ inner: [] }),
    reason: "invalid_exact_svm_smart_wallet_no_transfer_in_simulation",
    code: "unexpected_instructions",
  },
  {
    name: "a transfer authorised by our fee payer",
    sim: () => ({
      inner: group(parsed({}), parsed({ authority: devnet.feePayer.address, destination: source })),
    }),
    reason: "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
    code: "fee_payer_in_transfer",
  },
  {
    name: "the simulation fails",
    sim: () => ({ err: { InstructionError: [2, { Custom: 6001 }] } }),
    reason: "invalid_exact_svm_smart_wallet_simulation_failed",
    code: "simulation_failed",
  },
  {
    name: "a program outside the allow-list",
    shape: { program: randomAddress() },
    reason: "invalid_exact_svm_smart_wallet_program_not_allowed",
    code: "unexpected_instructions",
  },
  {
    name: "our fee payer among the Squads instruction's accounts",
    shape: { squadsAccounts: [] },
    reason: "invalid_exact_svm_smart_wallet_fee_payer_not_isolated",
    code: "fee_payer_in_transfer",
  },
  {
    name: "a compute-unit limit above the cap (and above our static path's)",
    shape: { units: 400_001 },
    reason: "invalid_exact_svm_smart_wallet_compute_units_too_high",
    code: "compute_budget_too_high",
  },
  {
    // Our static path caps the limit at 200,000 before it looks at the layout; the reference
    // does not: the smart-wallet path's own cap applies, in both.
    name: "a compute-unit limit above our static path's cap, within the smart-wallet one",
    shape: { units: 300_000 },
    sim: () => ({ inner: group(parsed({})) }),
    reason: "valid",
  },
  {
    name: "a priority fee above the cap",
    shape: { microLamports: 50_001n },
    reason: "invalid_exact_svm_smart_wallet_priority_fee_too_high",
    code: "compute_budget_too_high",
  },
  {
    name: "a SetComputeUnitLimit too short",
    shape: { limitData: Uint8Array.from([2, 1, 0]) },
    reason: "invalid_exact_svm_smart_wallet_malformed_compute_limit",
    code: "unexpected_instructions",
  },
  {
    name: "a SetComputeUnitPrice too short",
    shape: { priceData: Uint8Array.from([3, 1, 0, 0]) },
    reason: "invalid_exact_svm_smart_wallet_malformed_compute_price",
    code: "unexpected_instructions",
  },
  {
    name: "another compute-budget instruction (RequestHeapFrame)",
    shape: { priceData: Uint8Array.from([1, 0, 0, 1, 0]) },
    reason: "invalid_exact_svm_smart_wallet_unsupported_compute_budget_instruction",
    code: "unexpected_instructions",
  },
  {
    name: "a memo other than requirements.extra.memo",
    shape: { memo: "not the order" },
    memo: "order-42",
    sim: () => ({ inner: group(parsed({})) }),
    reason: "invalid_exact_svm_payload_memo_mismatch",
    code: "memo_mismatch",
  },
  {
    name: "the memo requirements.extra.memo asks",
    shape: { memo: "order-42" },
    memo: "order-42",
    sim: () => ({ inner: group(parsed({})) }),
    reason: "valid",
  },
];

async function paymentFor(c: Case) {
  const shape =
    c.shape?.squadsAccounts !== undefined
      ? { ...c.shape, squadsAccounts: [devnet.feePayer.address as Address] }
      : (c.shape ?? {});
  const made = await squadsPayment(shape);
  const requirements = c.memo
    ? { ...made.requirements, extra: { ...made.requirements.extra, memo: c.memo } }
    : made.requirements;
  return { payload: { ...made.payload, accepted: requirements }, requirements };
}

describe("verify: ours and the official scheme give the same verdict", () => {
  test.each(cases)("$name", async (c) => {
    simulated = c.sim?.() ?? { inner: group(parsed({})) };
    const { payload, requirements } = await paymentFor(c);
    const theirs = await official.verify(payload as never, requirements as never);
    const x402 = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
    const mine = await handlePost(ours, "/verify", x402);
    const plain = await handlePost(ours, "/verify", { payload, requirements });
    if (c.reason === "valid") {
      expect(theirs).toEqual({ isValid: true, payer: randomVault });
      expect(mine.body).toEqual({ isValid: true, payer: randomVault });
      expect(plain.body).toEqual({ success: true, payer: randomVault });
      return;
    }
    expect(theirs.isValid).toBe(false);
    expect(theirs.invalidReason?.startsWith(c.reason)).toBe(true);
    expect(mine.body).toMatchObject({ isValid: false, invalidReason: c.reason });
    expect(plain).toMatchObject({ status: 400, body: { success: false, error: c.code } });
  });

  test("a transfer listed compiled (indexes into the keys), as getTransaction lists one", async () => {
    const { payload, requirements } = await squadsPayment();
    const decoded = decodeSvmTransaction(payload.payload.transaction);
    if (!decoded.ok) throw new Error(decoded.message);
    const at = (a: string) => decoded.transaction.staticAccounts.indexOf(a);
    const data = Buffer.alloc(10);
    data.writeUInt8(12, 0);
    data.writeBigUInt64LE(1_000n, 1);
    data.writeUInt8(6, 9);
    const compiled = {
      programIdIndex: at(TOKEN),
      accounts: [at(source), at(devnet.mint.address), at(payeeAta), at(payer(1).address)],
      data: getBase58Decoder().decode(data),
      stackHeight: 2,
    };
    simulated = { inner: group(compiled) };
    const theirs = await official.verify(payload as never, requirements as never);
    expect(theirs).toEqual({ isValid: true, payer: payer(1).address });
    const mine = await handlePost(ours, "/verify", {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(mine.body).toEqual({ isValid: true, payer: payer(1).address });
    // The official exported reader, over the same list, finds what ours finds.
    const keys = decoded.transaction.staticAccounts;
    const official_ = extractTransfersFromInnerInstructions(simulated.inner as never, [...keys]);
    const ours_ = innerTransfers(simulated.inner, keys);
    expect(
      ours_.map(({ programId, amount, mint, destination, authority }) => ({
        programId,
        amount,
        mint,
        destination,
        authority,
      })),
    ).toEqual(official_);
  });

  test("switched off, both refuse it for its layout, with the same reason", async () => {
    simulated = { inner: group(parsed({})) };
    const { payload, requirements } = await squadsPayment();
    const reason = "invalid_exact_svm_payload_no_transfer_instruction";
    expect(await officialOff.verify(payload as never, requirements as never)).toMatchObject({
      isValid: false,
      invalidReason: reason,
    });
    const mine = await handlePost(oursOff, "/verify", {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(mine.body).toMatchObject({ isValid: false, invalidReason: reason });
  });
});

describe("the official exported checks, held to ours", () => {
  test("extractTransfersFromInnerInstructions reads the parsed transfers ours reads", () => {
    const inner = group(
      parsed({}),
      parsed({ amount: 7n, mint: randomAddress() }),
      { programId: randomAddress(), parsed: { type: "transferChecked", info: {} } },
      { programId: TOKEN, parsed: { type: "transfer", info: { amount: "5" } } },
    );
    const official_ = extractTransfersFromInnerInstructions(inner as never, []);
    const ours_ = innerTransfers(inner, []).map(
      ({ programId, amount, mint, destination, authority }) => ({
        programId,
        amount,
        mint,
        destination,
        authority,
      }),
    );
    expect(ours_).toEqual(official_);
    expect(ours_).toHaveLength(2);
  });

  test("assertFeePayerIsolated and ours refuse the same transactions", async () => {
    for (const squadsAccounts of [[], [devnet.feePayer.address as Address]]) {
      const { payload } = await squadsPayment({ squadsAccounts });
      const wire = payload.payload.transaction as string;
      const decoded = decodeSvmTransaction(wire);
      if (!decoded.ok) throw new Error(decoded.message);
      const tx = getTransactionDecoder().decode(Buffer.from(wire, "base64"));
      const theirs = await assertFeePayerIsolated(tx as never, devnet.feePayer.address).then(
        () => "isolated",
        (e: Error) => e.message,
      );
      const mine = checkSmartWalletShape(decoded.transaction, [devnet.feePayer.address], {
        allowedPrograms: DEFAULT_PROGRAMS,
        ...LIMITS,
      });
      if (squadsAccounts.length === 0) {
        expect(theirs).toBe("isolated");
        expect(mine.ok).toBe(true);
      } else {
        expect(theirs).toMatch(/^invalid_exact_svm_smart_wallet_fee_payer_not_isolated: /);
        expect(mine).toMatchObject({
          ok: false,
          x402Reason: "invalid_exact_svm_smart_wallet_fee_payer_not_isolated",
        });
      }
    }
  });

  test("ours, stricter: the whole fee within --svm-max-fee-lamports (the reference has no cap)", async () => {
    const { payload } = await squadsPayment({ units: 400_000, microLamports: 50_000n });
    const decoded = decodeSvmTransaction(payload.payload.transaction);
    if (!decoded.ok) throw new Error(decoded.message);
    const options = { allowedPrograms: DEFAULT_PROGRAMS, ...LIMITS };
    const feePayers = [devnet.feePayer.address];
    // Two signatures and 400,000 units at 50,000 micro-lamports: 10,000 + 20,000 lamports.
    expect(checkSmartWalletShape(decoded.transaction, feePayers, options, 30_000n).ok).toBe(true);
    expect(checkSmartWalletShape(decoded.transaction, feePayers, options, 29_999n)).toMatchObject({
      ok: false,
      x402Reason: "invalid_exact_svm_smart_wallet_priority_fee_too_high",
    });
    // Without a SetComputeUnitLimit (here a second price in its place) the runtime's default
    // counts: 200,000 units for each of the two other instructions, 20,000 lamports at this price.
    const price = Buffer.alloc(9);
    price.writeUInt8(3, 0);
    price.writeBigUInt64LE(50_000n, 1);
    const { payload: noLimit } = await squadsPayment({
      microLamports: 50_000n,
      limitData: Uint8Array.from(price),
    });
    const bare = decodeSvmTransaction(noLimit.payload.transaction);
    if (!bare.ok) throw new Error(bare.message);
    expect(checkSmartWalletShape(bare.transaction, feePayers, options, 30_000n).ok).toBe(true);
    expect(checkSmartWalletShape(bare.transaction, feePayers, options, 29_999n).ok).toBe(false);
  });

  test("assertSmartWalletLimits takes what our settings take", () => {
    // Our settings: units from 1, the price from 0 (settings.ts's parsers).
    expect(() =>
      assertSmartWalletLimits({ maxComputeUnits: 1, maxPriorityFeeMicroLamports: 0 }),
    ).not.toThrow();
    expect(() => assertSmartWalletLimits({ maxComputeUnits: 0 })).toThrow();
    expect(() => assertSmartWalletLimits({ maxPriorityFeeMicroLamports: -1 })).toThrow();
  });
});

describe("settle: success only once the confirmed transaction shows the transfer", () => {
  test("it does: success, once", async () => {
    simulated = { inner: group(parsed({})) };
    confirmedInner = group(parsed({}));
    const { payload, requirements } = await squadsPayment();
    const settled = await handlePost(ours, "/settle", { payload, requirements });
    expect(settled).toMatchObject({ status: 200, body: { success: true } });
    const again = await handlePost(ours, "/settle", { payload, requirements });
    expect(again.body).toMatchObject({ success: false, error: "duplicate_settlement" });
    // The status query's view of the chain says what the store says: it landed and paid.
    const entry = await journal.findByTransaction(settled.body.transactionHash as string);
    expect(entry?.state).toBe("answered");
    expect((await ours.svm.observe(entry as JournalEntry)).onChain).toBe("mined");
  });

  test("it does not: post_settlement_transfer_not_confirmed, as the official scheme", async () => {
    simulated = { inner: group(parsed({})) };
    confirmedInner = [];
    const mine = await squadsPayment();
    const theirs = await squadsPayment();
    const official_ = await official.settle(theirs.payload as never, theirs.requirements as never);
    expect(official_).toMatchObject({
      success: false,
      errorReason: "post_settlement_transfer_not_confirmed",
    });
    const x402 = {
      x402Version: 2,
      paymentPayload: mine.payload,
      paymentRequirements: mine.requirements,
    };
    const settled = await handlePost(ours, "/settle", x402);
    expect(settled.body).toMatchObject({
      success: false,
      errorReason: "post_settlement_transfer_not_confirmed",
    });
    expect(settled.body.transaction).toBeTruthy();
    // The status query's view of the chain: landed, but paid nothing, so failed, as the store says.
    const entry = await journal.findByTransaction(settled.body.transaction as string);
    expect(entry?.state).toBe("failed");
    expect((await ours.svm.observe(entry as JournalEntry)).onChain).toBe("failed");
    // A retry is never a success either, and says the same.
    const again = await handlePost(ours, "/settle", x402);
    expect(again.body).toMatchObject({
      success: false,
      errorReason: "post_settlement_transfer_not_confirmed",
      transaction: settled.body.transaction,
    });
  });

  test("submitted waits for the transfer on chain all the same", async () => {
    simulated = { inner: group(parsed({})) };
    confirmedInner = [];
    const { payload, requirements } = await squadsPayment();
    const settled = await handlePost(ours, "/settle", {
      payload,
      requirements,
      waitUntil: "submitted",
    });
    expect(settled.body).toMatchObject({ success: false, error: "settlement_failed" });
  });

  test("followed by the reconciler: landed without the transfer is failed, never answered success", async () => {
    simulated = { inner: group(parsed({})) };
    confirmedInner = [];
    confirmedVisible = false;
    try {
      const { payload, requirements } = await squadsPayment();
      // The node does not show the landed transaction yet: pending, the journal follows it.
      const first = await handlePost(ours, "/settle", { payload, requirements });
      expect(first.body).toMatchObject({ success: false, error: "settlement_pending" });
      confirmedVisible = true;
      const found = await reconcileOnce([ours.svm], journal);
      const mine = found.find((f) => f.transaction === first.body.transactionHash);
      expect(mine).toMatchObject({ outcome: "failed" });
      expect(mine?.detail).toContain("post_settlement_transfer_not_confirmed");
      const retry = await handlePost(ours, "/settle", { payload, requirements });
      // Not a duplicate: the transfer never happened, and the retry says so.
      expect(retry.body).toMatchObject({ success: false, error: "settlement_failed" });
    } finally {
      confirmedVisible = true;
    }
  });

  test("followed by the reconciler: landed with the transfer is landed, answered success once", async () => {
    simulated = { inner: group(parsed({})) };
    confirmedInner = group(parsed({}));
    confirmedVisible = false;
    try {
      const { payload, requirements } = await squadsPayment();
      const first = await handlePost(ours, "/settle", { payload, requirements });
      expect(first.body).toMatchObject({ success: false, error: "settlement_pending" });
      confirmedVisible = true;
      const found = await reconcileOnce([ours.svm], journal);
      expect(found.find((f) => f.transaction === first.body.transactionHash)).toMatchObject({
        outcome: "landed",
      });
      const retry = await handlePost(ours, "/settle", { payload, requirements });
      expect(retry.body).toMatchObject({ success: true });
      const again = await handlePost(ours, "/settle", { payload, requirements });
      expect(again.body.success).toBe(false);
    } finally {
      confirmedVisible = true;
    }
  });
});
