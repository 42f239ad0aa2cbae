/**
 * A Solana balance read at `processed` is answered from a slot still being filled: it may not show
 * a transaction that lands in that same slot a moment later, while a signature status read just
 * after says it landed there. The payer's hold must still count that transaction, or a second
 * payment of the payer's whole balance is sent, fails on chain, and costs us its fee.
 *
 * The devnet's slots stand still while both settles run (so all is in one slot), and a JSON-RPC
 * proxy orders the calls as a busy node or a slow store can: the first payment's broadcast waits
 * until the second's balance read was answered, and the second's status read waits until that
 * broadcast was answered. Once it was, slots move again (for the answers to be confirmed).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { PostgresStore } from "../src/store/postgres.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import {
  PAYER_USDC_BALANCE,
  type SvmDevKey,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { devnetPayment, svmLamports, svmTokenBalance } from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let proxy: RpcProxy;
let postgres: Postgres;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startSvmDevnet({ payers: 2 }), startPostgres()]);
  proxy = await startRpcProxy(devnet.rpcUrl);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await postgres?.stop();
  await devnet?.stop();
});

/** Resolves once `open()` was called. */
function gate(): { readonly passed: Promise<void>; open(): void } {
  let open = () => {};
  const passed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { passed, open };
}

/**
 * Settles two payments of `from`'s whole balance at once, through `facilitators` (one each, in
 * turn), the calls ordered as above; says what each answered and how many were broadcast.
 */
async function straddled(facilitators: readonly Facilitator[], from: SvmDevKey) {
  const payments = await Promise.all([
    devnetPayment(devnet, from, PAYER_USDC_BALANCE),
    devnetPayment(devnet, from, PAYER_USDC_BALANCE),
  ]);
  devnet.cluster.stopSlots();
  const fees = await svmLamports(devnet, devnet.feePayer.address);
  const balanceRead = gate();
  const sent = gate();
  let sends = 0;
  proxy.intercept = (method, params) => {
    // Only a payer's hold reads a token balance: the second settle's.
    if (method === "getTokenAccountBalance") return { after: balanceRead.open };
    if (method === "sendTransaction" && sends++ === 0) {
      return { before: () => balanceRead.passed, after: sent.open };
    }
    if (method !== "getSignatureStatuses") return undefined;
    // The hold's status read (a settle's own checks ask with the history).
    const options = (params as [unknown, { searchTransactionHistory?: boolean }?])[1];
    return options?.searchTransactionHistory ? undefined : { before: () => sent.passed };
  };
  void sent.passed.then(() => devnet.cluster.startSlots(50));
  try {
    const replies = await Promise.all(
      payments.map((p, i) =>
        handlePost(facilitators[i % facilitators.length] as Facilitator, "/settle", {
          payload: p.payload,
          requirements: p.requirements,
        }),
      ),
    );
    const spent = fees - (await svmLamports(devnet, devnet.feePayer.address));
    return { replies, sends, spent };
  } finally {
    proxy.intercept = () => undefined;
  }
}

/** One paid, the other refused before anything was sent: one transaction's fee, no more. */
async function expectOnePaid(outcome: Awaited<ReturnType<typeof straddled>>, from: SvmDevKey) {
  const { replies, sends, spent } = outcome;
  const said = JSON.stringify(replies);
  expect(
    replies.filter((r) => r.status === 200),
    said,
  ).toHaveLength(1);
  expect(
    replies.find((r) => r.status !== 200),
    said,
  ).toMatchObject({ status: 400, body: { error: "insufficient_funds" } });
  expect(sends, said).toBe(1);
  expect(spent).toBe(10_001n);
  expect(await svmTokenBalance(devnet, from.address)).toBe(0n);
}

const feePayerKey = () => {
  const key = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!key) throw new Error("no fee payer key");
  return key;
};

describe("a payer's hold on Solana, when another payment lands in the slot its balance was read at", () => {
  test("one process: the second whole-balance payment is refused, and nothing more is sent", async () => {
    const f = new Facilitator({ rpcUrls: [proxy.url], svmFeePayers: [feePayerKey()] });
    const from = devnet.payers[0] as SvmDevKey;
    await expectOnePaid(await straddled([f], from), from);
  });

  test("two replicas on one PostgreSQL store: the same, decided under the store's lock", async () => {
    const url = await postgres.freshDatabase("svm_same_slot");
    const stores = await Promise.all(
      ["replica-a", "replica-b"].map((owner) => PostgresStore.open(url, { signers: [], owner })),
    );
    try {
      const replicas = stores.map(
        (journal) =>
          new Facilitator({ rpcUrls: [proxy.url], svmFeePayers: [feePayerKey()], journal }),
      );
      const from = devnet.payers[1] as SvmDevKey;
      await expectOnePaid(await straddled(replicas, from), from);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
