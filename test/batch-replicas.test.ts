/**
 * A refund on one replica ends every replica's trust in what it remembered of the channel. Two
 * `serve` replicas on one real PostgreSQL store and one anvil devnet: replica B has just verified a
 * voucher of a channel holding 10,000, so its channel book remembers that balance; the seller
 * refunds 8,000 through replica A. Before: B accepted vouchers up to 10,000 on a channel holding
 * 2,000 for as long as its book stayed fresh (up to 30 s), answering `extra.balance "10000"`. Now:
 * A records the change in the store, and B reads the channel again before its next voucher.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DevAccount, devAccounts } from "../src/evm/devnet/index.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
import { postJson } from "./helpers/facilitator.js";
import { type Cluster, startCluster } from "./helpers/replicas.js";

const PRICE = 1_000n;
const SELLER_KEY = "replicated-seller-0123456789abcdef";

let cluster: Cluster;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-batch-replicas-"));
  const keys = path.join(dir, "api-keys.json");
  // The devnet's payee is the seller; the file is written before the devnet is known, so the
  // payee's fixed dev account (9) is named.
  writeFileSync(
    keys,
    JSON.stringify({
      anonymous: true,
      keys: [
        { name: "seller", key: SELLER_KEY, receivers: [(devAccounts[9] as DevAccount).address] },
      ],
    }),
  );
  cluster = await startCluster({
    count: 2,
    env: {
      FACILITATOR_RECEIVER_AUTHORIZER_KEY: (devAccounts[7] as DevAccount).privateKey,
      FACILITATOR_API_KEYS_FILE: keys,
    },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("a refund through replica A: replica B reads the channel again before its next voucher", async () => {
  const { devnet, replicas } = cluster;
  const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
  const payer = devnet.payers[2] as DevAccount;
  const offer = batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: (devAccounts[7] as DevAccount).address,
    price: PRICE,
  });
  const { config, voucher, claimRow } = officialChannel(devnet, payer, offer);
  const pays = async (amount: bigint) =>
    x402Request(offer, { type: "voucher", channelConfig: config, voucher: await voucher(amount) });
  const post = async (replica: { url: string }, route: string, body: unknown, key?: string) =>
    (await postJson(replica, route, body, key)).body;

  // 10,000 deposited through A; B verifies a voucher of 2,000 and remembers the balance.
  const deposit = await officialPayload(devnet, payer, offer, 10);
  expect(await post(a, "/settle", x402Request(offer, deposit))).toMatchObject({ success: true });
  expect(await post(b, "/verify", await pays(2n * PRICE))).toMatchObject({
    isValid: true,
    extra: { balance: (10n * PRICE).toString() },
  });

  // The seller claims its 2,000 and refunds the other 8,000 through A.
  const refund = await post(
    a,
    "/settle",
    x402Request(managerRequirements(offer), {
      type: "refund",
      channelConfig: config,
      voucher: await voucher(2n * PRICE),
      amount: (8n * PRICE).toString(),
      refundNonce: "0",
      claims: [await claimRow(2n * PRICE)],
    }),
    SELLER_KEY,
  );
  expect(refund, JSON.stringify(refund)).toMatchObject({
    success: true,
    extra: { channelState: { balance: (2n * PRICE).toString() } },
  });

  // B's book still says 10,000, read seconds ago; the channel holds 2,000, all claimed.
  for (const amount of [3n, 5n, 10n]) {
    const answer = await post(b, "/verify", await pays(amount * PRICE));
    expect(answer, JSON.stringify(answer)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    });
  }
}, 120_000);
