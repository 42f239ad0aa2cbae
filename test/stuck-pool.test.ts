/**
 * A pool that takes a transaction and never mines it (issue 38, item 4: ganache 7.9 did so at one
 * nonce). The devnet's anvil (1 s blocks) sits behind test/helpers/rpc-proxy.ts' `neverMine`
 * mode, which answers for that nonce as such a node does (the hash, found pending, counted in the
 * pending count) and keeps it and every replacement of it from anvil; the proxy also answers
 * web3_clientVersion as geth, so none of the local-node rules apply. Payments are the official x402
 * client's. The same scenarios run on a second node implementation, ganache 7.9, in
 * test/ganache.test.ts.
 *
 * What must hold: the transaction is replaced with raised fees within a bounded time; when that
 * does not get it mined, the key is blocked (said in /health and in one log line naming key,
 * nonce and since when), settles behind it answer at once instead of waiting out their timeout,
 * a new settle goes to another key or is refused at once with 503 `overloaded`; and once the hole
 * is filled each payment has landed once and the key settles again.
 */
import { createTestClient, type Hex, http, parseTransaction } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { checkHealth } from "../src/http/health.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { proxiedDevnet } from "./helpers/proxied-devnet.js";

const net = proxiedDevnet();

const GETH = "Geth/v1.16.7-stable-b9f3a3d9/linux-amd64/go1.24.9";

/** A provider in front of the devnet whose pool never mines `from`'s transaction at `nonce`. */
async function poolStuckAt(from: string, nonce: number, refuseReplacements = false) {
  const proxy = await net.proxy({
    neverMine: (tx) => tx.from === from.toLowerCase() && tx.nonce === nonce,
    ...(refuseReplacements
      ? { refuseReplacements: { code: -32000, message: "replacement transaction underpriced" } }
      : {}),
  });
  proxy.intercept = (method) => (method === "web3_clientVersion" ? { swallow: GETH } : undefined);
  return proxy;
}

type Body = { success: boolean; error?: string; message?: string; transactionHash?: Hex };

async function settle(facilitator: Facilitator, request: Awaited<ReturnType<typeof net.payment>>) {
  const started = Date.now();
  const reply = await handleSettle(facilitator, request);
  return { status: reply.status, body: reply.body as Body, ms: Date.now() - started, reply };
}

// The held settle waits out its confirm timeout: long enough for three replacements on 1 s blocks
// (the key is blocked about 6 s in on a busy machine), no longer.
const OPTIONS = { replaceAfterMs: 1_000, confirmTimeoutMs: 14_000, receiptPollMs: 200 };

describe("a pool that never mines one nonce of a key", () => {
  test("one key: replaced, then blocked (health, log); the settles behind answer early, a new one is refused at once; filled, all land once and the key settles again", async () => {
    const key = privateKeyToAccount(net.devnet.facilitator.privateKey);
    const chain = chainOf(net.devnet);
    const first = await chain.getTransactionCount({ address: key.address });
    // The second settle's nonce is the one the pool keeps.
    const hole = first + 1;
    const proxy = await poolStuckAt(key.address, hole);
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: key,
      ...OPTIONS,
    });
    const events: unknown[] = [];
    facilitator.signers.onEvent = (event) => events.push(event);
    const payeeBefore = await tokenBalance(net.devnet, net.devnet.payee.address);

    const one = await settle(facilitator, await net.payment());
    expect(one.body, one.body.message).toMatchObject({ success: true });
    const started = Date.now();
    const stuck = settle(facilitator, await net.payment());
    await new Promise((r) => setTimeout(r, 300));
    const behind = await Promise.all(
      [1, 2, 3].map(async () => settle(facilitator, await net.payment())),
    );
    const held = await stuck;
    // The held one was replaced with raised fees, and followed to its timeout (not mined).
    expect(held.body).toMatchObject({ success: false, error: "settlement_pending" });
    const replacements = proxy.neverMined.map((tx) => parseTransaction(tx.raw));
    expect(replacements.length, "the transaction and its replacements").toBeGreaterThanOrEqual(3);
    const fees = replacements.map((tx) => tx.maxFeePerGas ?? 0n);
    expect(fees).toEqual([...fees].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(fees).size).toBe(fees.length);
    // Those behind it did not wait out their 14 s: they answered once the key was blocked.
    for (const b of behind) {
      expect(b.body).toMatchObject({ success: false, error: "settlement_pending" });
      expect(b.ms).toBeLessThan(OPTIONS.confirmTimeoutMs - 4_000);
    }
    // Blocked: said once, naming key, nonce and since when; /health shows it.
    expect(events).toEqual([
      expect.objectContaining({
        event: "key_blocked",
        signer: key.address,
        hole: expect.objectContaining({ nonce: hole, chainId: net.devnet.chainId }),
      }),
    ]);
    const since = (events[0] as { hole: { since: number } }).hole.since;
    expect(since).toBeGreaterThanOrEqual(started - 1_000);
    const health = await checkHealth(facilitator);
    expect(health.blockedKeys).toEqual([
      expect.objectContaining({ signer: key.address, nonce: hole, network: net.devnet.network }),
    ]);
    // A new settle is refused at once, 503 overloaded, naming the key and the nonce; nothing sent.
    const sendsBefore =
      (proxy.counts.get("eth_sendRawTransaction") ?? 0) +
      (proxy.counts.get("eth_sendRawTransactionSync") ?? 0);
    const refused = await settle(facilitator, await net.payment());
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ success: false, error: "overloaded" });
    expect(refused.body.message).toContain(key.address);
    expect(refused.body.message).toContain(`nonce ${hole}`);
    expect(refused.reply.failure?.retryAfterSeconds).toBeGreaterThan(0);
    expect(refused.ms).toBeLessThan(1_500);
    const sendsAfter =
      (proxy.counts.get("eth_sendRawTransaction") ?? 0) +
      (proxy.counts.get("eth_sendRawTransactionSync") ?? 0);
    expect(sendsAfter).toBe(sendsBefore);

    // The operator gets the held transaction to a node that mines it (its newest replacement).
    const newest = proxy.neverMined.at(-1)?.raw as Hex;
    await chain.sendRawTransaction({ serializedTransaction: newest });
    await waitFor(
      async () => (await chain.getTransactionCount({ address: key.address })) >= hole + 4,
    );
    // Each payment landed once: the first, the held one and the three behind it; nothing else.
    expect(await tokenBalance(net.devnet, net.devnet.payee.address)).toBe(
      payeeBefore + 5n * 10_000n,
    );
    expect(await chain.getTransactionCount({ address: key.address })).toBe(hole + 4);
    // The key settles again, and says it was unblocked.
    const again = await settle(facilitator, await net.payment());
    expect(again.body, again.body.message).toMatchObject({ success: true });
    expect(events.at(-1)).toMatchObject({ event: "key_unblocked", signer: key.address });
    expect((await checkHealth(facilitator)).blockedKeys).toEqual([]);
  }, 90_000);

  test("two keys, a replacement refused: not swallowed, the key is blocked at once and new settles go to the other key", async () => {
    const stuckKey = privateKeyToAccount(generatePrivateKey());
    const otherKey = privateKeyToAccount(generatePrivateKey());
    const chain = chainOf(net.devnet);
    for (const account of [stuckKey, otherKey]) {
      const anvil = createTestClient({ mode: "anvil", transport: http(net.devnet.rpcUrl) });
      await anvil.setBalance({ address: account.address, value: 10n ** 20n });
    }
    const proxy = await poolStuckAt(stuckKey.address, 0, true);
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signers: [stuckKey, otherKey],
      ...OPTIONS,
      // Blocked at its first replacement (about 2 s in): the held one need not wait 14 s.
      confirmTimeoutMs: 8_000,
    });
    const events: { event: string; hole: { reason: string } }[] = [];
    facilitator.signers.onEvent = (event) => events.push(event as never);

    // Settles go to the keys in turn: the first to the stuck key (nonce 0, kept by the pool).
    const held = await settle(facilitator, await net.payment());
    expect(held.body).toMatchObject({ success: false, error: "settlement_pending" });
    // The first replacement was refused, and that blocked the key: no further replacement.
    expect(proxy.neverMined).toHaveLength(1);
    expect(events).toHaveLength(1);
    expect(events[0]?.hole.reason).toMatch(/refused its replacement: .*underpriced/);
    // Every settle now goes to the other key, and lands.
    for (let i = 0; i < 3; i++) {
      const next = await settle(facilitator, await net.payment());
      expect(next.body, next.body.message).toMatchObject({ success: true });
      const tx = await chain.getTransaction({ hash: next.body.transactionHash as Hex });
      expect(tx.from.toLowerCase()).toBe(otherKey.address.toLowerCase());
    }
    expect(await chain.getTransactionCount({ address: stuckKey.address })).toBe(0);
  }, 90_000);
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 200));
  }
}
