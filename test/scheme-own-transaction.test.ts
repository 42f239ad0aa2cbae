/**
 * A scheme that sends a transaction of its own, added as every scheme is: test/schemes/memo/ is a
 * scheme written for this test (no file of src/ was edited for it), registered beside exact, upto
 * and batch-settlement. On a real anvil devnet (blocks mined by hand), through the real HTTP
 * handler: it is listed on /supported; its settle is written down before it is sent and answered
 * `submitted`; dropped from the pool, one reconciler pass sends the same bytes again and records
 * it landed; the retry is never a second success, and `GET /settlements` finds it by its hash.
 */
import { createTestClient, type Hex, hexToString, http } from "viem";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { EVM_SCHEMES } from "../src/evm/schemes.js";
import type { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn, handlePost } from "./helpers/facilitator.js";
import { requirementsV2 } from "./helpers/x402.js";
import { MEMO, memoScheme } from "./schemes/memo/index.js";

let devnet: Devnet;
let facilitator: Facilitator;

beforeAll(async () => {
  devnet = await startDevnet({ mining: "manual" });
  facilitator = facilitatorOn(devnet, {
    schemes: [...EVM_SCHEMES, memoScheme],
    confirmTimeoutMs: 1_500,
    replaceAfterMs: 60_000,
  });
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const ours = () =>
  chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });

const text = (body: unknown) => (typeof body === "string" ? body : JSON.stringify(body));

function memoRequest(memo: string, waitUntil?: string) {
  const requirements = { ...requirementsV2(devnet), scheme: MEMO };
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url: "http://localhost/memo" },
      accepted: requirements,
      payload: { memo },
    },
    paymentRequirements: requirements,
    ...(waitUntil ? { waitUntil } : {}),
  };
}

test("a scheme's own transaction: listed, written down, sent, followed after a drop, never answered twice", async () => {
  const handler = createHandler(facilitator);
  const supported = await handler({ method: "GET", url: "/supported", headers: {} });
  expect(text(supported.body)).toContain(`"scheme":"${MEMO}"`);

  const memo = "paid in full, thank you";
  const before = await ours();
  const answered = await handlePost(facilitator, "/settle", memoRequest(memo, "submitted"));
  expect(answered.body, JSON.stringify(answered.body)).toMatchObject({ success: true });
  const hash = answered.body.transaction as Hex;
  expect(await ours()).toBe(before + 1);

  await anvil().dropTransaction({ hash });
  expect(await ours()).toBe(before);
  const [pass] = await Promise.all([
    facilitator.reconcile(),
    (async () => {
      for (let i = 0; i < 200 && (await ours()) === before; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      await anvil().mine({ blocks: 1 });
    })(),
  ]);
  expect(pass).toEqual([expect.objectContaining({ outcome: "landed", transaction: hash })]);
  const sent = await chainOf(devnet).getTransaction({ hash });
  expect(sent.to?.toLowerCase()).toBe(devnet.payee.address.toLowerCase());
  expect(hexToString(sent.input)).toBe(memo);

  const again = await handlePost(facilitator, "/settle", memoRequest(memo));
  expect(again.body, JSON.stringify(again.body)).toMatchObject({
    success: false,
    errorReason: "duplicate_settlement",
  });
  expect(await ours()).toBe(before + 1);

  const found = await handler({
    method: "GET",
    url: `/settlements?transaction=${hash}`,
    headers: {},
  });
  expect(text(found.body)).toContain(hash);
}, 60_000);
