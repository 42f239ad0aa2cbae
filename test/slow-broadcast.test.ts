/**
 * A broadcast whose synchronous answer outlasts the RPC timeout while the node holds the
 * transaction (bench:overload, issue 40: on a starved machine, ~2 % of the settles taken during
 * the overload answered settlement_pending "the broadcast's answer was lost", though they were
 * mined within the confirm timeout). Real anvil that mines only when told, behind the RPC proxy,
 * which holds each eth_sendRawTransactionSync 2.5 s before passing it on (a node slow to take
 * it): the facilitator's look at the pool after 2 s finds nothing, and its sync request times out
 * at 4 s with the transaction in the pool. Payments are the official x402 client's.
 *
 * What must hold: the settle follows the transaction it knows the node holds and answers success
 * when it is mined within the confirm timeout, with one broadcast and the payment paid once.
 */
import { createTestClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { tokenBalance } from "./helpers/chain.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startDevnet();
  // Mining only when told: the sync call waits for its block as on a chain far behind.
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  await anvil.setAutomine(false);
  await anvil.setIntervalMining({ interval: 0 });
  proxy = await startRpcProxy(devnet.rpcUrl);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("a synchronous broadcast answered after the RPC timeout", () => {
  test("the settle follows the transaction the node holds and answers success once it is mined", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
      requestTimeoutMs: 4_000,
      confirmTimeoutMs: 20_000,
      receiptPollMs: 200,
    });
    const requirements = requirementsV2(devnet);
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payers");
    const request = { payload: await clientPayload(payer, requirements), requirements };
    let syncSends = 0;
    proxy.intercept = (method) => {
      if (method !== "eth_sendRawTransactionSync") return undefined;
      syncSends += 1;
      return { before: () => sleep(2_500) };
    };
    const before = await tokenBalance(devnet, devnet.payee.address);
    const sentBefore = proxy.counts.get("eth_sendRawTransaction") ?? 0;

    const settling = handleSettle(facilitator, request);
    // Past the RPC timeout of the sync call, the block that mines it.
    await sleep(6_000);
    await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });
    const reply = await settling;

    expect(reply.body, JSON.stringify(reply.body)).toMatchObject({ success: true });
    expect(syncSends + (proxy.counts.get("eth_sendRawTransaction") ?? 0) - sentBefore).toBe(1);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 10_000n);
  }, 60_000);
});
