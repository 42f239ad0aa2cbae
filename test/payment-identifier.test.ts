/**
 * The x402 payment-identifier extension with the journal file (one process): the same id and
 * request answers the first success again, also after a restart; another request under the same
 * id is idempotency_conflict; a success whose transaction a reorg dropped is not repeated.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-payment-id-")),
  ]);
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const withId = (id: string) => ({ "payment-identifier": { info: { required: true, id } } });

async function request(amount: string, id: string) {
  const requirements = requirementsV2(devnet, { amount });
  const payer = devnet.payers[2];
  if (!payer) throw new Error("no payer");
  const payload = await clientPayload(payer, requirements);
  return { payload: { ...payload, extensions: withId(id) }, requirements };
}

describe("payment-identifier on the journal file", () => {
  test("same id and request: the first success, also after a restart; another request: 409", async () => {
    const file = path.join(dir, "journal.jsonl");
    const id = "pay_journal_0123456789abcdef";
    const body = await request("10000", id);
    const payee = await tokenBalance(devnet, devnet.payee.address);

    const journal = new Journal(file);
    const first = await handleSettle(facilitatorOn(devnet, { journal }), body);
    expect(first).toMatchObject({ status: 200, body: { success: true } });
    const hash = (first.body as { transactionHash: string }).transactionHash;
    // Keys in another order are the same request.
    const reordered = { requirements: body.requirements, payload: body.payload };
    const again = await handleSettle(facilitatorOn(devnet, { journal }), reordered);
    expect(again).toMatchObject({ status: 200, body: { success: true, transactionHash: hash } });
    journal.close();

    const reopened = new Journal(file);
    const facilitator = facilitatorOn(devnet, { journal: reopened });
    const afterRestart = await handleSettle(facilitator, body);
    expect(afterRestart).toMatchObject({ status: 200, body: { transactionHash: hash } });
    const other = await handleSettle(facilitator, await request("20000", id));
    expect(other).toMatchObject({ status: 409, body: { error: "idempotency_conflict" } });
    reopened.close();
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + 10_000n);
  });

  test("a kept success whose transaction a reorg dropped is not repeated", async () => {
    const testClient = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    const journal = new Journal();
    const facilitator = facilitatorOn(devnet, { journal });
    const id = "pay_reorg_0123456789abcdef";
    const body = await request("10000", id);
    const snapshot = await testClient.snapshot();
    const first = await handleSettle(facilitator, body);
    expect(first.status).toBe(200);
    await testClient.revert({ id: snapshot });
    // The answer never names a transaction the chain no longer has: the payment is settled again
    // (its bytes sent again and mined), or refused; any hash it names is on the chain.
    const again = await handleSettle(facilitator, body);
    const answered = (again.body as { transactionHash?: string }).transactionHash;
    if (answered) {
      const receipt = await chainOf(devnet).getTransactionReceipt({
        hash: answered as `0x${string}`,
      });
      expect(receipt.status).toBe("success");
    }
  });
});
