/**
 * A second node implementation (issue 38): ganache 7.9.2 from npm (test/helpers/ganache.ts), run
 * in this process on Node 20 (Hardhat 3's EDR, the other candidate, needs Node 22), mining a block
 * every second whether or not transactions wait. It is no local node to us (its client version is
 * "Ganache/v7.9.2/..."), so it is settled on as any remote node is. Payments are the official x402
 * client's; the facilitator's core settles them with ganache as its only RPC, and the CLI with
 * `--rpc-url` at it.
 *
 * What differs from anvil, and what this holds:
 * - no eth_sendRawTransactionSync: receipts are polled; each payment lands once, answered once;
 * - its pool, sent many transactions of one key at once, may file one behind a predecessor that is
 *   being mined and never look at it again (what issue 38 saw at nonce 54): it is replaced;
 * - it words a used nonce "the tx doesn't have the correct nonce" (geth: "nonce too low"): that is
 *   a used nonce, taken again at the next one, never "the node refused the transaction";
 * - the stuck-pool scenarios (test/stuck-pool.test.ts) on ganache, behind test/helpers/rpc-proxy.ts'
 *   `neverMine` mode: the held transaction is replaced with raised fees, the key blocked (health,
 *   event), a refused replacement is not swallowed, nothing is sent twice; the transactions behind
 *   the hole wait in ganache's own pool, which mines them once the hole is filled.
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Address, type Hex, parseTransaction } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { checkHealth } from "../src/http/health.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { type GanacheDevnet, startGanacheDevnet } from "./helpers/ganache.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { runCli } from "./helpers/run-cli.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: GanacheDevnet;
const proxies: RpcProxy[] = [];

beforeAll(async () => {
  devnet = await startGanacheDevnet();
}, 60_000);

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  await Promise.all(proxies.map((p) => p.close()));
  await devnet?.stop();
});

let payerTurn = 0;
/** A distinct payment of 0.01 USDC to `payTo` signed by the x402 client (payers in turn). */
async function payment(payTo: Address = devnet.payee.address) {
  const requirements = requirementsV2(devnet, { payTo });
  const payer = devnet.payers[payerTurn++ % devnet.payers.length];
  if (!payer) throw new Error("no payers");
  return { payload: await clientPayload(payer, requirements), requirements };
}

type Body = { success: boolean; error?: string; message?: string; transactionHash?: Hex };

async function settle(facilitator: Facilitator, request: Awaited<ReturnType<typeof payment>>) {
  const started = Date.now();
  const reply = await handleSettle(facilitator, request);
  return { status: reply.status, body: reply.body as Body, ms: Date.now() - started, reply };
}

/** A proxy in front of ganache, counting what passes (and holding what `modes` say). */
async function proxied(modes: Parameters<typeof startRpcProxy>[1] = {}) {
  const proxy = await startRpcProxy(devnet.rpcUrl, modes);
  proxies.push(proxy);
  return proxy;
}

const sends = (proxy: RpcProxy) =>
  (proxy.counts.get("eth_sendRawTransaction") ?? 0) +
  (proxy.counts.get("eth_sendRawTransactionSync") ?? 0);

/** A fresh key with gas on ganache, so each test's nonces start at 0. */
async function freshKey() {
  const key = privateKeyToAccount(generatePrivateKey());
  await devnet.rpc("evm_setAccountBalance", [key.address, `0x${(10n ** 20n).toString(16)}`]);
  return key;
}

async function waitFor(check: () => Promise<boolean>, ms = 20_000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("payments on ganache 7.9", () => {
  test("settled one after another: each lands once and is answered once; settled again, nonce_already_used", async () => {
    const key = await freshKey();
    const proxy = await proxied();
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: key,
    });
    const before = await tokenBalance(devnet, devnet.payee.address);
    for (let i = 0; i < 3; i++) {
      const request = await payment();
      const first = await settle(facilitator, request);
      expect(first.body, first.body.message).toMatchObject({ success: true });
      const receipt = await chainOf(devnet).getTransactionReceipt({
        hash: first.body.transactionHash as Hex,
      });
      expect(receipt.status).toBe("success");
      const again = await settle(facilitator, request);
      expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
    }
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 3n * 10_000n);
    expect(await chainOf(devnet).getTransactionCount({ address: key.address })).toBe(3);
    // Ganache has no eth_sendRawTransactionSync: asked once, then the plain method only.
    expect(proxy.counts.get("eth_sendRawTransactionSync") ?? 0).toBeLessThanOrEqual(1);
    expect(proxy.counts.get("eth_sendRawTransaction")).toBe(3);
  }, 60_000);

  test("the CLI with --rpc-url at ganache: settle exits 0 with the hash, the same payment again exits 1 nonce_already_used", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-ganache-"));
    const keyFile = path.join(dir, "key");
    const key = generatePrivateKey();
    await devnet.rpc("evm_setAccountBalance", [
      privateKeyToAccount(key).address,
      `0x${(10n ** 20n).toString(16)}`,
    ]);
    await writeFile(keyFile, `${key}\n`, { mode: 0o600 });
    const request = path.join(dir, "request.json");
    await writeFile(request, JSON.stringify(await payment()));
    const env = {
      FACILITATOR_PRIVATE_KEY_FILE: keyFile,
      FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
      FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
    };
    const args = ["settle", request, "--rpc-url", devnet.rpcUrl, "-q"];
    const first = await runCli(args, env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const hash = (JSON.parse(first.stdout) as { transactionHash: Hex }).transactionHash;
    expect((await chainOf(devnet).getTransactionReceipt({ hash })).status).toBe("success");
    const again = await runCli(args, env);
    expect(again.code, again.stdout).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ error: "nonce_already_used" });
    // doctor finds the RPC, the key's gas and the tokens on ganache as on anvil.
    const doctor = await runCli(["doctor", "--rpc-url", devnet.rpcUrl], env);
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
  }, 60_000);

  test("a nonce the key used elsewhere (ganache: 'the tx doesn't have the correct nonce') is taken as used: the payment settles at the next one", async () => {
    const key = await freshKey();
    const proxy = await proxied();
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: key,
    });
    const first = await settle(facilitator, await payment());
    expect(first.body, first.body.message).toMatchObject({ success: true });
    // Another process sends from the same key (nonce 1), straight to the node.
    const chain = chainOf(devnet);
    const elsewhere = await key.signTransaction({
      chainId: devnet.chainId,
      nonce: 1,
      to: key.address,
      gas: 21_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
    });
    const hash = await chain.sendRawTransaction({ serializedTransaction: elsewhere });
    await chain.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    const before = await tokenBalance(devnet, devnet.payee.address);
    const next = await settle(facilitator, await payment());
    expect(next.body, next.body.message).toMatchObject({ success: true });
    const tx = await chain.getTransaction({ hash: next.body.transactionHash as Hex });
    expect(tx.nonce).toBe(2);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 10_000n);
  }, 60_000);

  test("24 settled at once on one key: every payment lands once and is answered once, none waits out its timeout", async () => {
    const key = await freshKey();
    const chain = chainOf(devnet);
    const fromBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      useDefaultRpcs: false,
      signer: key,
      replaceAfterMs: 2_000,
      confirmTimeoutMs: 20_000,
    });
    const before = await tokenBalance(devnet, devnet.payee.address);
    const requests = await Promise.all(Array.from({ length: 24 }, () => payment()));
    const answers = await Promise.all(requests.map((request) => settle(facilitator, request)));
    for (const a of answers) {
      expect(a.body, a.body.message).toMatchObject({ success: true });
      expect(a.ms).toBeLessThan(15_000);
    }
    expect(new Set(answers.map((a) => a.body.transactionHash)).size).toBe(24);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 24n * 10_000n);
    // What ganache mined from the key: per nonce, one success. Ganache may also mine a
    // replacement beside the transaction it replaced, at the same nonce (its pool's bug: a chain
    // never has two): that one reverts (the authorization is used) and pays nothing.
    const mined = new Map<number, string[]>();
    for (let n = fromBlock + 1n; n <= (await chain.getBlockNumber({ cacheTime: 0 })); n++) {
      const block = await chain.getBlock({ blockNumber: n, includeTransactions: true });
      for (const tx of block.transactions) {
        if (tx.from.toLowerCase() !== key.address.toLowerCase()) continue;
        const receipt = await chain.getTransactionReceipt({ hash: tx.hash });
        mined.set(tx.nonce, [...(mined.get(tx.nonce) ?? []), receipt.status]);
      }
    }
    expect([...mined.keys()].sort((a, b) => a - b)).toEqual([...Array(24).keys()]);
    for (const statuses of mined.values()) {
      expect(statuses.filter((s) => s === "success")).toHaveLength(1);
    }
  }, 60_000);
});

// Replaced after 3 s, followed for 30 s: ganache mines in this process, and under CI's load a
// block can take over a second. A transaction replaced "on time alone" then may be mined beside
// its replacement (ganache's pool bug: two at one nonce), using up the next nonce, the hole's.
const STUCK = { replaceAfterMs: 3_000, confirmTimeoutMs: 30_000, receiptPollMs: 200 };

// Each with its own key, proxy and facilitator: run side by side, as most of each waits on blocks.

describe.concurrent("a pool that never mines one nonce, in front of ganache", () => {
  test("one key: replaced with raised fees, then blocked (health, event); those behind answer early, a new settle is refused at once; filled, all land once", async () => {
    const key = await freshKey();
    const chain = chainOf(devnet);
    // The second settle's nonce (1) is the one the pool keeps.
    const hole = 1;
    const proxy = await proxied({
      neverMine: (tx) => tx.from === key.address.toLowerCase() && tx.nonce === hole,
    });
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: key,
      ...STUCK,
    });
    const events: unknown[] = [];
    facilitator.signers.onEvent = (event) => events.push(event);
    // A payee of its own: the test beside this one pays too.
    const payee = privateKeyToAccount(generatePrivateKey()).address;

    const one = await settle(facilitator, await payment(payee));
    expect(one.body, one.body.message).toMatchObject({ success: true });
    const started = Date.now();
    const stuck = settle(facilitator, await payment(payee));
    await new Promise((r) => setTimeout(r, 300));
    const behind = await Promise.all(
      [1, 2, 3].map(async () => settle(facilitator, await payment(payee))),
    );
    const held = await stuck;
    expect(held.body).toMatchObject({ success: false, error: "settlement_pending" });
    const replacements = proxy.neverMined.map((tx) => parseTransaction(tx.raw));
    expect(replacements.length, "the transaction and its replacements").toBeGreaterThanOrEqual(3);
    const fees = replacements.map((tx) => tx.maxFeePerGas ?? 0n);
    expect(fees).toEqual([...fees].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(fees).size).toBe(fees.length);
    for (const b of behind) {
      expect(b.body).toMatchObject({ success: false, error: "settlement_pending" });
      expect(b.ms).toBeLessThan(STUCK.confirmTimeoutMs - 2_000);
    }
    expect(events).toEqual([
      expect.objectContaining({
        event: "key_blocked",
        signer: key.address,
        hole: expect.objectContaining({ nonce: hole, chainId: devnet.chainId }),
      }),
    ]);
    const since = (events[0] as { hole: { since: number } }).hole.since;
    expect(since).toBeGreaterThanOrEqual(started - 1_000);
    const health = await checkHealth(facilitator);
    expect(health.blockedKeys).toEqual([
      expect.objectContaining({ signer: key.address, nonce: hole, network: devnet.network }),
    ]);
    // Those behind the hole wait in ganache's own pool (a nonce gap), found pending there.
    const waiting = await chain.getTransaction({ hash: behind[0]?.body.transactionHash as Hex });
    expect(waiting.blockNumber).toBeNull();
    // A new settle is refused at once, 503 overloaded, naming key and nonce; nothing sent.
    const sendsBefore = sends(proxy);
    const refused = await settle(facilitator, await payment(payee));
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ success: false, error: "overloaded" });
    expect(refused.body.message).toContain(key.address);
    expect(refused.body.message).toContain(`nonce ${hole}`);
    expect(refused.ms).toBeLessThan(1_500);
    expect(sends(proxy)).toBe(sendsBefore);

    // The operator gets the newest replacement to the node: ganache mines it and those behind.
    const newest = proxy.neverMined.at(-1)?.raw as Hex;
    await chain.sendRawTransaction({ serializedTransaction: newest });
    await waitFor(
      async () => (await chain.getTransactionCount({ address: key.address })) >= hole + 4,
    );
    expect(await tokenBalance(devnet, payee)).toBe(5n * 10_000n);
    expect(await chain.getTransactionCount({ address: key.address })).toBe(hole + 4);
    const again = await settle(facilitator, await payment(payee));
    expect(again.body, again.body.message).toMatchObject({ success: true });
    expect(events.at(-1)).toMatchObject({ event: "key_unblocked", signer: key.address });
    expect((await checkHealth(facilitator)).blockedKeys).toEqual([]);
  }, 90_000);

  test("two keys, the replacement refused as ganache words it: not swallowed, the key is blocked at once, new settles go to the other key", async () => {
    const stuckKey = await freshKey();
    const otherKey = await freshKey();
    const chain = chainOf(devnet);
    const proxy = await proxied({
      neverMine: (tx) => tx.from === stuckKey.address.toLowerCase() && tx.nonce === 0,
      // Ganache's own answer to a replacement it will not take.
      refuseReplacements: { code: -32003, message: "transaction underpriced" },
    });
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signers: [stuckKey, otherKey],
      ...STUCK,
    });
    const payee = privateKeyToAccount(generatePrivateKey()).address;
    const events: { event: string; hole: { reason: string } }[] = [];
    facilitator.signers.onEvent = (event) => events.push(event as never);

    const held = await settle(facilitator, await payment(payee));
    expect(held.body).toMatchObject({ success: false, error: "settlement_pending" });
    expect(proxy.neverMined).toHaveLength(1);
    expect(events).toHaveLength(1);
    expect(events[0]?.hole.reason).toMatch(/refused its replacement: .*underpriced/);
    for (let i = 0; i < 3; i++) {
      const next = await settle(facilitator, await payment(payee));
      expect(next.body, next.body.message).toMatchObject({ success: true });
      const tx = await chain.getTransaction({ hash: next.body.transactionHash as Hex });
      expect(tx.from.toLowerCase()).toBe(otherKey.address.toLowerCase());
    }
    expect(await chain.getTransactionCount({ address: stuckKey.address })).toBe(0);
  }, 90_000);
});
