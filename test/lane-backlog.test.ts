/**
 * A key's lane behind (issue 40, "Overload is refused early and recovers"): settles arrive faster
 * than the chain mines the key's transactions. The devnet's anvil mines a block a second with
 * nothing mined on arrival, and its block gas limit is set so one settlement fits a block: the
 * key confirms one payment a second, deterministically. The proxy in front answers
 * web3_clientVersion as geth, so the rules for every node apply, not a local node's; payments are
 * the official x402 client's.
 *
 * What must hold: no replacement is sent for a transaction waiting behind an earlier unmined
 * nonce of its key (the soak of issue 40 made 11,875 replacements for 10,446 sends that way); once
 * the lane is behind by more than it mines in the confirm timeout, a new settle is refused at once
 * with 503 `overloaded` and Retry-After instead of waiting that timeout out; what was sent lands,
 * each payment once; and when the arrivals stop, the key settles again.
 */
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startDevnet();
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  await anvil.mine({ blocks: 1 });
  await anvil.setAutomine(false);
  await anvil.setIntervalMining({ interval: 1 });
  // A settlement here asks for ~70-100k gas: 150k fits one a block, never two.
  await anvil.setBlockGasLimit({ gasLimit: 150_000n });
  proxy = await startRpcProxy(devnet.rpcUrl);
  proxy.intercept = (method) =>
    method === "web3_clientVersion"
      ? { swallow: "Geth/v1.16.7-stable/linux-amd64/go1.24.9" }
      : undefined;
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

type Body = { success: boolean; error?: string; message?: string; transactionHash?: Hex };

const sends = () =>
  (proxy.counts.get("eth_sendRawTransaction") ?? 0) +
  (proxy.counts.get("eth_sendRawTransactionSync") ?? 0);

describe("settles arriving ten times faster than the key's transactions are mined", () => {
  test("no replacement behind the backlog; past what confirms in the timeout, refused at once with 503 overloaded; what was sent lands once", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
      replaceAfterMs: 1_000,
      confirmTimeoutMs: 6_000,
      receiptPollMs: 200,
    });
    const requirements = requirementsV2(devnet);
    const requests = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const payer = devnet.payers[i % devnet.payers.length];
        if (!payer) throw new Error("no payers");
        return { payload: await clientPayload(payer, requirements), requirements };
      }),
    );
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
    const sentBefore = sends();
    const answers = await Promise.all(
      requests.map(async (request, i) => {
        await new Promise((r) => setTimeout(r, i * 100));
        const started = Date.now();
        const reply = await handleSettle(facilitator, request);
        return { reply, body: reply.body as Body, ms: Date.now() - started };
      }),
    );
    const refused = answers.filter((a) => a.body.error === "overloaded");
    const taken = answers.filter((a) => a.body.error !== "overloaded");
    const tally = JSON.stringify(
      answers.map((a) => `${a.body.success ? "ok" : a.body.error} ${a.ms}ms`),
    );
    console.log(
      `lane-backlog: ${refused.length} refused, ${taken.length} sent, ${sends() - sentBefore} broadcasts: ${tally}`,
    );
    // Refused at once, 503 with Retry-After, naming the key and how far behind it is.
    expect(refused.length, tally).toBeGreaterThanOrEqual(5);
    for (const r of refused) {
      expect(r.reply.status).toBe(503);
      expect(r.ms, tally).toBeLessThan(1_000);
      expect(r.reply.failure?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(r.body.message).toMatch(/transactions behind/);
    }
    // One broadcast per settle that was given a nonce: no replacement of any waiting one.
    expect(sends() - sentBefore, tally).toBe(taken.length);
    // What was sent lands, each payment once.
    const chain = chainOf(devnet);
    const until = Date.now() + 40_000;
    while (
      (await tokenBalance(devnet, devnet.payee.address)) <
      payeeBefore + BigInt(taken.length) * 10_000n
    ) {
      if (Date.now() > until) throw new Error(`not all landed: ${tally}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(
      payeeBefore + BigInt(taken.length) * 10_000n,
    );
    // The arrivals stopped and the backlog is mined: a refused payment now settles, once.
    const before = await tokenBalance(devnet, devnet.payee.address);
    const again = requests[answers.findIndex((a) => a.body.error === "overloaded")];
    const retried = (await handleSettle(facilitator, again as never)).body as Body;
    expect(retried, retried.message).toMatchObject({ success: true });
    const tx = await chain.getTransaction({ hash: retried.transactionHash as Hex });
    expect(tx.from.toLowerCase()).toBe(devnet.facilitator.address.toLowerCase());
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 10_000n);
  }, 120_000);
});
