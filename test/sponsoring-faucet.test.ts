/**
 * Approval gas sponsoring is no faucet (issue 37, item 3). A payer with tokens, no ether and no
 * Permit2 approval pays with the official client's `erc20ApprovalGasSponsoring`: we send it the
 * gas for its signed approve, then broadcast that approve. An attacker swaps the approve in the
 * pool (same nonce, higher fee, signed with the payer's key, sent straight to anvil) for a
 * transfer to itself, and so keeps our ether. Before: funded again on every new payment (the
 * per-settlement journal key is fresh each time), no 429, nothing counted as wasted. Now: funded
 * once until an approval of its lands (a marker per payer in the store, so across a restart too),
 * the funding counted as wasted gas, and the next try waits with 429 `payer_throttled`. On a real
 * anvil whose pool is paused (no mining), so the swap lands ahead of our broadcast approve; for
 * `exact` Permit2 on both stores, and for `upto` and batch-settlement deposits, which build the
 * same approval prelude. Each test fails on the code before (funded every time, nothing wasted).
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Address, createTestClient, type Hex, http, keccak256, parseTransaction } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { SettlementStore } from "../src/core/store.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { createHandler } from "../src/http/handler.js";
import { createMetrics } from "../src/http/metrics.js";
import { startServer } from "../src/http/server.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { batchRequirements, officialSigner } from "./helpers/batch.js";
import { chainOf, mineWhile, payerHolding } from "./helpers/chain.js";
import { facilitatorOn, postJson } from "./helpers/facilitator.js";
import { permit2Requirements } from "./helpers/permit2.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

let devnet: Devnet;
let postgres: Postgres;

beforeAll(async () => {
  [devnet, postgres] = await Promise.all([startDevnet({ mining: "manual" }), startPostgres()]);
}, 90_000);
afterAll(async () => {
  await devnet?.stop();
  await postgres?.stop();
});

/** The batch-settlement channel's receiver authorizer: ours, as in batch-deposit-sponsoring. */
const AUTHORIZER = devAccounts[7] as DevAccount;
const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const DECLARATION = {
  erc20ApprovalGasSponsoring: { info: { description: "gasless approval", version: "1" } },
};

type Scheme = "exact" | "upto" | "batch deposit";

/**
 * A payment signed by the official client (`exact` Permit2 by default), which signs the payer's
 * approve itself: the /settle body, and that approve.
 */
async function officialPayment(payer: DevAccount, scheme: Scheme = "exact") {
  const { x402Client } = await import("@x402/core/client");
  const account = privateKeyToAccount(payer.privateKey);
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  let requirements: Record<string, unknown>;
  if (scheme === "exact") {
    const { ExactEvmScheme } = await import("@x402/evm/exact/client");
    requirements = permit2Requirements(devnet, devnet.permitToken);
    client.register(devnet.network, new ExactEvmScheme(account, { rpcUrl: devnet.rpcUrl }));
  } else if (scheme === "upto") {
    const { UptoEvmScheme } = await import("@x402/evm/upto/client");
    requirements = {
      scheme: "upto",
      network: devnet.network,
      amount: "50000",
      asset: devnet.permitToken.address,
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
      extra: {
        name: devnet.permitToken.name,
        version: devnet.permitToken.version,
        facilitatorAddress: devnet.facilitator.address,
      },
    };
    client.register(devnet.network, new UptoEvmScheme(account, { rpcUrl: devnet.rpcUrl }));
  } else {
    const { BatchSettlementEvmScheme } = await import("@x402/evm/batch-settlement/client");
    requirements = batchRequirements(devnet, {
      payTo: devnet.payee.address,
      receiverAuthorizer: AUTHORIZER.address,
      price: 1_000n,
      token: devnet.permitToken as never,
      method: "permit2",
    });
    const batch = new BatchSettlementEvmScheme(officialSigner(devnet, payer), {
      depositPolicy: { depositMultiplier: 5 },
      rpcUrl: devnet.rpcUrl,
    } as never);
    client.register(devnet.network, batch);
  }
  const payload = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/paid" },
    accepts: [requirements],
    extensions: DECLARATION,
  } as never)) as unknown as Record<string, unknown>;
  const info = (payload.extensions as Record<string, { info: { signedTransaction: Hex } }>)
    .erc20ApprovalGasSponsoring?.info;
  return { body: { payload, requirements }, approve: info?.signedTransaction as Hex };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One try of the attacker: a fresh payment, settled while the pool is paused. Each of our
 * transactions is mined as it shows up; once our broadcast approve is in the pool, the payer's
 * swap replaces it and is mined. What we sent the payer is read from the blocks.
 */
async function attempt(
  server: { readonly url: string },
  payer: DevAccount,
  us: Address,
  scheme: Scheme = "exact",
) {
  const chain = chainOf(devnet);
  const { body, approve } = await officialPayment(payer, scheme);
  const approveHash = keccak256(approve);
  const sentBefore = await chain.getTransactionCount({ address: us, blockTag: "pending" });
  const fromBlock = (await chain.getBlockNumber({ cacheTime: 0 })) + 1n;
  let answered = false;
  const settling = postJson(server, "/settle", body).finally(() => {
    answered = true;
  });
  let swapped = false;
  while (!answered) {
    const pending = await chain.getTransactionCount({ address: us, blockTag: "pending" });
    const mined = await chain.getTransactionCount({ address: us });
    if (pending > mined) await anvil().mine({ blocks: 1 });
    const inPool = await chain.getTransaction({ hash: approveHash }).catch(() => undefined);
    if (inPool && !inPool.blockNumber && !swapped) {
      // The payer's own transfer to itself at the approve's nonce, at a higher fee.
      const signed = parseTransaction(approve);
      const account = privateKeyToAccount(payer.privateKey);
      const swap = await account.signTransaction({
        chainId: devnet.chainId,
        to: payer.address,
        value: 1n,
        nonce: signed.nonce ?? 0,
        gas: 21_000n,
        maxFeePerGas: ((signed.maxFeePerGas ?? 0n) * 12n) / 10n,
        maxPriorityFeePerGas: ((signed.maxPriorityFeePerGas ?? 0n) * 12n) / 10n,
      });
      await chain.sendRawTransaction({ serializedTransaction: swap });
      await anvil().mine({ blocks: 1 });
      swapped = true;
    }
    await sleep(50);
  }
  const reply = await settling;
  // Anything of ours still in the pool is mined, so the blocks hold all we sent.
  await anvil().mine({ blocks: 1 });
  let funded = 0n;
  let fundings = 0;
  let fundHash: Hex | undefined;
  const head = await chain.getBlockNumber({ cacheTime: 0 });
  for (let n = fromBlock; n <= head; n++) {
    const block = await chain.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== us.toLowerCase()) continue;
      if (tx.to?.toLowerCase() === payer.address.toLowerCase()) {
        funded += tx.value;
        fundings++;
        fundHash = tx.hash;
      }
    }
  }
  const sent = (await chain.getTransactionCount({ address: us })) - sentBefore;
  const landed = await chain.getTransactionReceipt({ hash: approveHash }).catch(() => undefined);
  return {
    reply,
    sent,
    funded,
    fundings,
    fundHash,
    swapped,
    approveLanded: landed !== undefined,
    approve,
  };
}

const wastedGas = (text: string) =>
  BigInt(/^facilitator_wasted_gas\{chain_id="31337"\} (\d+)$/m.exec(text)?.[1] ?? "0");

type Kind = "journal file, then a restart" | "postgres, then another replica";

/** A facilitator serving over `store` (with a signer of its own: replicas lease theirs). */
async function serve(store: SettlementStore, signer: DevAccount) {
  const facilitator = facilitatorOn(devnet, {
    journal: store,
    signer: privateKeyToAccount(signer.privateKey),
    confirmTimeoutMs: 8_000,
  });
  const metrics = await createMetrics();
  metrics.attach(facilitator);
  const server = await startServer(createHandler(facilitator, { metrics }), { port: 0 });
  return { server, metrics, wasted: async () => wastedGas((await metrics.render()).text) };
}

test.each<Kind>(["journal file, then a restart", "postgres, then another replica"])(
  "the payer swaps its approval for a transfer to itself, 3 times: funded once, the funding counted as wasted, its next tries wait with 429 (%s)",
  async (kind) => {
    const chain = chainOf(devnet);
    await anvil().setAutomine(true);
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    await anvil().setAutomine(false);
    const other = devAccounts[8] as DevAccount;
    let open: (signer: DevAccount) => Promise<SettlementStore>;
    if (kind.startsWith("postgres")) {
      const url = await postgres.freshDatabase("faucet");
      open = (signer) =>
        PostgresStore.open(url, {
          signers: [signer.address],
          leaseMs: 3_000,
          // Two replicas in one process: each its own name.
          owner: `replica-${signer.address}`,
        });
    } else {
      const file = path.join(
        await mkdtemp(path.join(os.tmpdir(), "facilitator-faucet-")),
        "j.jsonl",
      );
      open = async () => new Journal(file);
    }
    const stores: SettlementStore[] = [];
    const servers: { close(): Promise<void> }[] = [];
    const tries = [];
    let wasted = 0n;
    let wastedElsewhere = 0n;
    try {
      stores.push(await open(devnet.facilitator));
      const first = await serve(stores[0] as SettlementStore, devnet.facilitator);
      servers.push(first.server);
      for (let i = 0; i < 2; i++)
        tries.push(await attempt(first.server, payer, devnet.facilitator.address));
      wasted = await first.wasted();
      if (kind.startsWith("journal")) {
        // A restart over the same file: the payer is still known as funded.
        await first.server.close();
        servers.length = 0;
        (stores.pop() as SettlementStore).close();
      }
      stores.push(await open(other));
      const second = await serve(stores.at(-1) as SettlementStore, other);
      servers.push(second.server);
      tries.push(await attempt(second.server, payer, other.address));
      if (kind.startsWith("postgres")) {
        // The other replica hears of the waste with its lease renewal (a third of a lease).
        for (let i = 0; i < 40 && (await second.wasted()) === 0n; i++) await sleep(100);
        wastedElsewhere = await second.wasted();
      }
    } finally {
      for (const server of servers) await server.close();
      for (const store of stores) await store.close();
    }
    const report = tries.map((t) => ({
      status: t.reply.status,
      error: t.reply.body.error,
      retryAfter: t.reply.retryAfter,
      sent: t.sent,
      funded: t.funded.toString(),
      swapped: t.swapped,
    }));
    console.log(
      `sponsoring faucet (${kind}), 3 tries: ${JSON.stringify(report)}; wasted gas counted ${wasted}${kind.startsWith("postgres") ? `, by the other replica ${wastedElsewhere}` : ""}`,
    );

    const [one, two, three] = tries;
    // Funded once, exactly what its approve may cost at the fee it signed.
    const signed = parseTransaction(one?.approve as Hex);
    expect(one?.fundings).toBe(1);
    expect(one?.funded).toBe((signed.gas ?? 0n) * (signed.maxFeePerGas ?? 0n));
    expect(one?.swapped).toBe(true);
    expect(one?.approveLanded).toBe(false);
    expect(one?.reply.status).toBe(400);
    expect(one?.reply.body).toMatchObject({ success: false, error: "settlement_failed" });
    expect(String(one?.reply.body.message)).toMatch(/can never land: its nonce 0 went to another/);
    // Counted as wasted: the funding's own gas and the ether it carried, in gas at its price.
    const fund = await chain.getTransactionReceipt({ hash: one?.fundHash as Hex });
    const price = fund.effectiveGasPrice;
    const worth = fund.gasUsed + ((one?.funded ?? 0n) + price - 1n) / price;
    expect(wasted).toBe(worth);
    if (kind.startsWith("postgres")) expect(wastedElsewhere).toBe(worth);
    for (const next of [two, three]) {
      expect(next?.reply.status, JSON.stringify(next?.reply.body)).toBe(429);
      expect(next?.reply.body).toMatchObject({ success: false, error: "payer_throttled" });
      expect(String(next?.reply.body.message)).toMatch(
        /is not funded again for \d+ s, or until an approval of its lands/,
      );
      expect(Number(next?.reply.retryAfter)).toBeGreaterThan(3_500);
      expect(next?.sent).toBe(0);
      expect(next?.funded).toBe(0n);
    }
  },
  120_000,
);

test("fresh payers: a funding whose approval has not landed yet counts against the budget, and stops counting once it lands", async () => {
  const chain = chainOf(devnet);
  await anvil().setAutomine(true);
  const [first, second] = [
    await payerHolding(devnet, 1_000_000n, devnet.permitToken.address),
    await payerHolding(devnet, 1_000_000n, devnet.permitToken.address),
  ] as [DevAccount, DevAccount];
  await anvil().setAutomine(false);
  // Room for one funding of a 70,000-gas approval (about 100,000 gas with its own), not two.
  const facilitator = facilitatorOn(devnet, {
    wastedGasBudget: 150_000n,
    signer: privateKeyToAccount((devAccounts[9] as DevAccount).privateKey),
  });
  const server = await startServer(createHandler(facilitator), { port: 0 });
  const us = (devAccounts[9] as DevAccount).address;
  try {
    const a = await officialPayment(first);
    const settlingA = postJson(server, "/settle", a.body);
    // Its funding is mined; its approve waits in the pool.
    const approveA = keccak256(a.approve);
    for (let i = 0; i < 100; i++) {
      const pending = await chain.getTransactionCount({ address: us, blockTag: "pending" });
      if (pending > (await chain.getTransactionCount({ address: us })))
        await anvil().mine({ blocks: 1 });
      if (await chain.getTransaction({ hash: approveA }).catch(() => undefined)) break;
      await sleep(50);
    }
    expect(await chain.getTransaction({ hash: approveA })).toMatchObject({ blockNumber: null });
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBeGreaterThan(90_000n);

    const sentBefore = await chain.getTransactionCount({ address: us, blockTag: "pending" });
    const b = await officialPayment(second);
    const body = b.body;
    const refused = await postJson(server, "/settle", body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(429);
    expect(refused.body).toMatchObject({ error: "payer_throttled" });
    expect(String(refused.body.message)).toMatch(/would take eip155:31337 past its budget/);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(await chain.getTransactionCount({ address: us, blockTag: "pending" })).toBe(sentBefore);

    // The first approval lands, and its payment with it: nothing of it is at risk any more.
    expect((await mineWhile(devnet.rpcUrl, settlingA, 100)).body).toMatchObject({ success: true });
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBe(0n);
    expect(
      (await mineWhile(devnet.rpcUrl, postJson(server, "/settle", body), 100)).body,
    ).toMatchObject({
      success: true,
    });
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBe(0n);
  } finally {
    await server.close();
  }
}, 120_000);

test.each<Scheme>(["upto", "batch deposit"])(
  "%s: the same prelude, the same rule: funded once, the funding wasted, the next try 429",
  async (scheme) => {
    await anvil().setAutomine(true);
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    await anvil().setAutomine(false);
    const facilitator = facilitatorOn(devnet, {
      receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
      confirmTimeoutMs: 8_000,
    });
    const server = await startServer(createHandler(facilitator), { port: 0 });
    try {
      const us = devnet.facilitator.address;
      const one = await attempt(server, payer, us, scheme);
      expect(one.reply.body, JSON.stringify(one.reply.body)).toMatchObject({
        error: "settlement_failed",
      });
      expect(one.swapped).toBe(true);
      expect(one.fundings).toBe(1);
      const signed = parseTransaction(one.approve);
      expect(one.funded).toBe((signed.gas ?? 0n) * (signed.maxFeePerGas ?? 0n));
      expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBeGreaterThan(signed.gas ?? 0n);
      const two = await attempt(server, payer, us, scheme);
      expect(two.reply.status, JSON.stringify(two.reply.body)).toBe(429);
      expect(two.reply.body).toMatchObject({ error: "payer_throttled" });
      expect(two.sent).toBe(0);
    } finally {
      await server.close();
    }
  },
  120_000,
);
