/**
 * A node's refusal is not the payment's failure (issue 38, item 5): a broadcast refused for a
 * reason that is not about the payment (nonce too high from a node behind a balancer, a full pool,
 * a tip under the pool's minimum) is sent again within the settle's time, and the payment lands
 * once and is answered success once. Refused for good, the answer and the access log say which
 * refusal it was. The devnet's anvil sits behind test/helpers/rpc-proxy.ts' `refuseFirstSend`
 * mode, which answers the first broadcast of a transaction with the node's error as geth words it
 * (-32000) without forwarding it; payments are the official x402 client's.
 */
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { proxiedDevnet } from "./helpers/proxied-devnet.js";
import type { RpcError, RpcProxy } from "./helpers/rpc-proxy.js";

const net = proxiedDevnet();

async function refusing(error: RpcError, times: number, each = false) {
  const proxy = await net.proxy({ refuseFirstSend: { error, times, each } });
  const facilitator = new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(net.devnet.facilitator.privateKey),
    confirmTimeoutMs: 10_000,
  });
  return { proxy, facilitator };
}

const sends = (proxy: RpcProxy) =>
  (proxy.counts.get("eth_sendRawTransaction") ?? 0) +
  (proxy.counts.get("eth_sendRawTransactionSync") ?? 0);

type Body = { success: boolean; error?: string; message?: string; transactionHash?: Hex };

describe("a broadcast refused for a reason not about the payment", () => {
  test.each([
    ["nonce too high", "nonce too high"],
    ["a full pool", "txpool is full"],
    ["a tip under the pool's minimum", "transaction underpriced"],
  ])(
    "%s: sent again, the payment lands once and is answered success once",
    async (_, message) => {
      // Twice: a synchronous send refused is also sent once by the plain method (chain/broadcast.ts).
      const { proxy, facilitator } = await refusing({ code: -32000, message }, 2, true);
      const chain = chainOf(net.devnet);
      const us = net.devnet.facilitator.address;
      const [sentBefore, payeeBefore] = await Promise.all([
        chain.getTransactionCount({ address: us }),
        tokenBalance(net.devnet, net.devnet.payee.address),
      ]);
      const request = await net.payment();
      const first = (await handleSettle(facilitator, request)).body as Body;
      expect(first, first.message).toMatchObject({ success: true });
      expect(proxy.refusedSends).toHaveLength(2);
      expect(sends(proxy)).toBe(3);
      // Settled again: the same success is not answered twice, nor paid twice.
      const again = (await handleSettle(facilitator, request)).body as Body;
      expect(again.success).toBe(false);
      expect(await chain.getTransactionCount({ address: us })).toBe(sentBefore + 1);
      expect(await tokenBalance(net.devnet, net.devnet.payee.address)).toBe(payeeBefore + 10_000n);
    },
    60_000,
  );

  test("refused every time: 500 settlement_failed naming the refusal, in the answer and the access log; nothing was sent, and the payment settles once later", async () => {
    const { proxy, facilitator } = await refusing(
      { code: -32000, message: "txpool is full" },
      1_000,
      true,
    );
    const payeeBefore = await tokenBalance(net.devnet, net.devnet.payee.address);
    const request = await net.payment();
    const handler = createHandler(facilitator);
    const response = await handler({
      method: "POST",
      url: "/settle",
      headers: { "content-type": "application/json", host: "127.0.0.1" },
      body: Buffer.from(JSON.stringify(request)),
      client: "127.0.0.1",
    });
    const body = JSON.parse(response.body) as Body;
    expect(response.status, response.body).toBe(500);
    expect(body).toMatchObject({ success: false, error: "settlement_failed" });
    expect(body.message).toMatch(/txpool is full \(pool\)/);
    expect(response.log).toMatchObject({ error: "settlement_failed", refusal: "pool" });
    expect(response.headers["retry-after"]).toBeDefined();
    // Re-sent within the settle's time, never taken.
    expect(proxy.refusedSends.length).toBeGreaterThan(1);
    expect(await tokenBalance(net.devnet, net.devnet.payee.address)).toBe(payeeBefore);
    // The provider takes it again: the same payment settles, once.
    proxy.modes = {};
    const later = (await handleSettle(facilitator, request)).body as Body;
    expect(later, later.message).toMatchObject({ success: true });
    expect(await tokenBalance(net.devnet, net.devnet.payee.address)).toBe(payeeBefore + 10_000n);
  }, 60_000);
});
