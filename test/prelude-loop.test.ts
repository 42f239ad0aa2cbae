/**
 * The approval preludes are actions through the settle loop (issue 41): the money rules of any
 * settlement hold for them. Here the prelude is an x402x EIP-2612 permit, sent by us before the
 * payment's transferFrom; anyone may submit a signed permit, so a payer (or anyone reading the
 * pool) can land the same permit first, at a higher fee, and ours reverts: our gas, spent for
 * nothing. On a real anvil whose pool is paused (no mining), so the front-run is mined first.
 * Before: a reverted prelude was charged to no one (neither when the settle saw it nor when the
 * reconciler did: its journal entry said for whom it was sent), so a facilitator over its
 * wasted-gas budget kept sending for fresh payers.
 */
import { type Address, createTestClient, encodeFunctionData, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { reconcileOnce } from "../src/core/reconciler.js";
import { testPermitTokenAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { signPermitRequest } from "../src/evm/devnet/sign-permit.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { PostgresStore } from "../src/store/postgres.js";
import { chainOf, mineWhile } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
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

type Kind = "journal" | "postgres";
const KINDS: Kind[] = ["journal", "postgres"];

/** A fresh store of `kind`: a journal in memory, or a fresh database. */
async function storeOf(kind: Kind, name: string) {
  if (kind === "journal") return new Journal();
  const url = await postgres.freshDatabase(name);
  return PostgresStore.open(url, { signers: [devnet.facilitator.address] });
}

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Who lands the payer's permit ahead of ours: any account with ether. */
const FRONT_RUNNER = devAccounts[6] as DevAccount;

type PermitBody = Awaited<ReturnType<typeof signPermitRequest>>;

/**
 * The payer's signed permit, submitted by someone else at ten times our fee and mined ahead of
 * ours: ours is taken out of the pool, the front-run mined, and ours put back (the same bytes).
 */
async function frontRun(body: PermitBody, ours: Hex) {
  const chain = chainOf(devnet);
  const tx = await chain.getTransaction({ hash: ours });
  const raw = (await chain.request({
    method: "eth_getRawTransactionByHash" as never,
    params: [ours] as never,
  })) as Hex;
  await anvil().dropTransaction({ hash: ours });
  const { authorization, signature } = body.payload.payload;
  const r = signature.slice(0, 66) as Hex;
  const s = `0x${signature.slice(66, 130)}` as Hex;
  const v = Number.parseInt(signature.slice(130, 132), 16);
  const account = privateKeyToAccount(FRONT_RUNNER.privateKey);
  const data = encodeFunctionData({
    abi: testPermitTokenAbi,
    functionName: "permit",
    args: [
      authorization.owner,
      authorization.spender as Address,
      BigInt(authorization.value),
      BigInt(authorization.deadline),
      v,
      r,
      s,
    ],
  });
  const fee = (tx.maxFeePerGas ?? tx.gasPrice ?? 1n) * 10n;
  const signed = await account.signTransaction({
    to: devnet.permitToken.address,
    data,
    chainId: devnet.chainId,
    nonce: await chain.getTransactionCount({ address: account.address, blockTag: "pending" }),
    gas: 200_000n,
    maxFeePerGas: fee,
    maxPriorityFeePerGas: fee,
  });
  await chain.sendRawTransaction({ serializedTransaction: signed });
  await anvil().mine({ blocks: 1 });
  await chain.sendRawTransaction({ serializedTransaction: raw });
}

/** Our newest transaction in the pool, once `us` has one there. */
async function ourPending(us: Address, sentBefore: number): Promise<Hex> {
  const chain = chainOf(devnet);
  for (let i = 0; i < 200; i++) {
    const block = await chain.getBlock({ blockTag: "pending", includeTransactions: true });
    const ours = block.transactions.find(
      (tx) => tx.from.toLowerCase() === us.toLowerCase() && tx.nonce >= sentBefore,
    );
    if (ours) return ours.hash;
    await sleep(50);
  }
  throw new Error("our permit never reached the pool");
}

/** A payer's permit payment whose permit is front-run: our permit reverts. What came of it. */
async function frontRunPermit(facilitator: ReturnType<typeof facilitatorOn>, payer: DevAccount) {
  const chain = chainOf(devnet);
  const us = devnet.facilitator.address;
  const body = await signPermitRequest(devnet, payer);
  const sentBefore = await chain.getTransactionCount({ address: us, blockTag: "pending" });
  const settling = handleSettle(facilitator, body);
  const permit = await ourPending(us, sentBefore);
  await frontRun(body, permit);
  await anvil().mine({ blocks: 1 });
  const receipt = await chain.getTransactionReceipt({ hash: permit });
  return { settling, receipt, body };
}

test.each(KINDS)(
  "a permit prelude of ours that reverts is wasted gas: charged, and past the budget a fresh payer's permit payment is refused, nothing sent (%s)",
  async (kind) => {
    const chain = chainOf(devnet);
    const journal = await storeOf(kind, "prelude_revert");
    // Room for no reverted permit (about 30,000 gas).
    const facilitator = facilitatorOn(devnet, {
      journal,
      wastedGasBudget: 10_000n,
      confirmTimeoutMs: 8_000,
    });
    const [first, second] = (kind === "journal" ? devnet.payers : devnet.payers.slice(3)) as [
      DevAccount,
      DevAccount,
    ];
    const { settling, receipt } = await frontRunPermit(facilitator, first);
    expect(receipt.status).toBe("reverted");
    const reply = await mineWhile(devnet.rpcUrl, settling, 100);
    expect(reply.body, JSON.stringify(reply.body)).toMatchObject({
      success: false,
      error: "settlement_failed",
    });
    expect(String(reply.body.message)).toMatch(/permit transaction .* reverted on chain/);
    // Our gas for the reverted permit counts against the chain's budget.
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBe(receipt.gasUsed);

    const us = devnet.facilitator.address;
    const sentBefore = await chain.getTransactionCount({ address: us, blockTag: "pending" });
    const next = await mineWhile(
      devnet.rpcUrl,
      handleSettle(facilitator, await signPermitRequest(devnet, second)),
      100,
    );
    expect(next.status, JSON.stringify(next.body)).toBe(429);
    expect(next.body).toMatchObject({ success: false, error: "payer_throttled" });
    expect(await chain.getTransactionCount({ address: us, blockTag: "pending" })).toBe(sentBefore);
    await journal.close();
  },
  120_000,
);

test.each(KINDS)(
  "a permit prelude still in the pool when its settle answered pending is followed by the reconciler to its revert, and charged (%s)",
  async (kind) => {
    const journal = await storeOf(kind, "prelude_reconciled");
    // The settle gives up on the permit's receipt before anything is mined.
    const facilitator = facilitatorOn(devnet, { journal, confirmTimeoutMs: 1_500 });
    // (The first test's refused payers have granted no allowance: their permit is still needed.)
    const payer = devnet.payers[kind === "journal" ? 2 : 1] as DevAccount;
    const { settling, receipt } = await (async () => {
      const chain = chainOf(devnet);
      const us = devnet.facilitator.address;
      const body = await signPermitRequest(devnet, payer);
      const sentBefore = await chain.getTransactionCount({ address: us, blockTag: "pending" });
      const answer = handleSettle(facilitator, body);
      const permit = await ourPending(us, sentBefore);
      const pendingReply = await answer;
      expect(pendingReply.body, JSON.stringify(pendingReply.body)).toMatchObject({
        success: false,
        error: "settlement_pending",
        transactionHash: permit,
      });
      await frontRun(body, permit);
      await anvil().mine({ blocks: 1 });
      return {
        settling: pendingReply,
        receipt: await chain.getTransactionReceipt({ hash: permit }),
      };
    })();
    expect(settling.status).toBe(500);
    expect(receipt.status).toBe("reverted");
    const before = facilitator.gasAtRisk.wastedGas(devnet.chainId);
    const found = await reconcileOnce([facilitator.evm], journal);
    expect(found.map((f) => f.outcome)).toContain("failed");
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId) - before).toBe(receipt.gasUsed);
    await journal.close();
  },
  120_000,
);
