/**
 * A voucher's verify holds on every replica: the highest cumulative amount accepted per channel
 * lives in the store (PostgreSQL for replicas, the file journal for one process), so a voucher
 * lower than one any replica accepted is stale everywhere, also under concurrent verifies and
 * after a restart. Deposits and vouchers from the official client; a real PostgreSQL; the devnet.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { VOUCHER_NAMESPACE } from "../src/evm/batch-settlement/voucher.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import {
  batchRequirements,
  officialChannelConfig,
  officialPayload,
  officialSigner,
} from "./helpers/batch.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

const PRICE = 1_000n;
const authorizer = devAccounts[7] as DevAccount;

let devnet: Devnet;
let postgres: Postgres;
let dir: string;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-vouchers-"));
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function facilitatorOn(journal: Journal | PostgresStore, signer: DevAccount) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(signer.privateKey),
    receiverAuthorizer: privateKeyToAccount(authorizer.privateKey),
    receiptPollMs: 50,
    journal,
  });
}

const accepted = () =>
  batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: privateKeyToAccount(authorizer.privateKey).address,
    price: PRICE,
  });

const body = (payload: unknown) => ({
  x402Version: 2,
  paymentPayload: { x402Version: 2, accepted: accepted(), payload },
  paymentRequirements: accepted(),
});

/** `payer`'s channel, funded through `facilitator`; vouchers of it for any cumulative amount. */
async function openChannel(facilitator: Facilitator, payer: DevAccount) {
  // 30 requests' worth, so every voucher below is covered.
  const deposit = await officialPayload(devnet, payer, accepted(), 30);
  const deposited = await handleSettle(facilitator, body(deposit));
  expect(deposited.body.success, JSON.stringify(deposited.body)).toBe(true);
  const channelConfig = officialChannelConfig(devnet, payer, accepted());
  const id = computeChannelId(channelConfig, devnet.network) as Hex;
  return async (amount: bigint) => {
    const voucher = await signVoucher(
      officialSigner(devnet, payer),
      id,
      amount.toString(),
      devnet.network,
    );
    return body({ type: "voucher", channelConfig, voucher });
  };
}

const verdict = async (facilitator: Facilitator, request: unknown) => {
  const answer = (await handleVerify(facilitator, request)).body as Record<string, unknown>;
  return answer.isValid === true ? "valid" : String(answer.invalidReason);
};

const STALE = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

describe("two replicas on one PostgreSQL store", () => {
  test("a voucher lower than one the other replica accepted is stale; so is one a replica's own book still thinks newest", async () => {
    const url = await postgres.freshDatabase("vouchers_replicas");
    const [storeA, storeB] = await Promise.all([
      PostgresStore.open(url, { signers: [devnet.facilitator.address], owner: "a" }),
      PostgresStore.open(url, { signers: [(devAccounts[6] as DevAccount).address], owner: "b" }),
    ]);
    try {
      const a = facilitatorOn(storeA, devnet.facilitator as DevAccount);
      const b = facilitatorOn(storeB, devAccounts[6] as DevAccount);
      const voucher = await openChannel(a, devnet.payers[0] as DevAccount);
      expect(await verdict(a, await voucher(3n * PRICE))).toBe("valid");
      expect(await verdict(b, await voucher(2n * PRICE))).toBe(STALE);
      // The same voucher again is the same payment's verify, not a new one: still valid.
      expect(await verdict(b, await voucher(3n * PRICE))).toBe("valid");
      expect(await verdict(b, await voucher(4n * PRICE))).toBe("valid");
      // A's book last saw 3; the store knows 4.
      expect(await verdict(a, await voucher(3n * PRICE))).toBe(STALE);

      // Twenty vouchers of one channel verified at once over both replicas: whatever the order,
      // afterwards the newest (24) is the only one either accepts below or at it.
      const amounts = Array.from({ length: 20 }, (_, i) => BigInt(5 + i) * PRICE);
      const requests = await Promise.all(amounts.map((amount) => voucher(amount)));
      const verdicts = await Promise.all(
        requests.map((request, i) => verdict(i % 2 === 0 ? a : b, request)),
      );
      expect(verdicts.every((v) => v === "valid" || v === STALE)).toBe(true);
      expect(verdicts.at(-1)).toBe("valid");
      expect(await verdict(a, requests.at(-2))).toBe(STALE);
      expect(await verdict(b, requests.at(-2))).toBe(STALE);
      expect(await verdict(a, requests.at(-1))).toBe("valid");
    } finally {
      await Promise.all([storeA.close(), storeB.close()]);
    }
  }, 60_000);
});

describe("one process on the file journal", () => {
  test("a restart remembers the newest voucher of each channel", async () => {
    const file = path.join(dir, "journal.jsonl");
    const first = new Journal(file);
    const before = facilitatorOn(first, devnet.facilitator as DevAccount);
    const voucher = await openChannel(before, devnet.payers[1] as DevAccount);
    for (const n of [2n, 3n, 4n, 5n]) {
      expect(await verdict(before, await voucher(n * PRICE))).toBe("valid");
    }
    first.close();
    // Raises within a second share one line per channel: the file grows by channels, not vouchers.
    const lines = readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l.includes('"t":"highest"'));
    expect(lines).toHaveLength(1);
    const raised = JSON.parse(lines[0] as string) as { namespace: string; id: string };
    expect(raised).toMatchObject({
      namespace: VOUCHER_NAMESPACE,
      value: (5n * PRICE).toString(),
    });
    // The same journal as the version before the store's state was generic wrote it (a voucher
    // line naming the channel) still holds the channel's newest voucher.
    const previous = path.join(dir, "previous.jsonl");
    writeFileSync(
      previous,
      `${JSON.stringify({ t: "voucher", channel: raised.id, amount: (5n * PRICE).toString() })}\n`,
    );
    const olderJournal = new Journal(previous);
    const older = facilitatorOn(olderJournal, devnet.facilitator as DevAccount);
    expect(await verdict(older, await voucher(4n * PRICE))).toBe(STALE);
    olderJournal.close();
    const after = facilitatorOn(new Journal(file), devnet.facilitator as DevAccount);
    expect(await verdict(after, await voucher(4n * PRICE))).toBe(STALE);
    expect(await verdict(after, await voucher(6n * PRICE))).toBe("valid");
  });
});
