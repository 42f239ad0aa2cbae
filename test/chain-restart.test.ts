/**
 * A chain that comes back without the token's code (a devnet or fork restarted, before its setup
 * ran): a settle must not send a transfer to no code on the strength of an earlier verify's cache.
 * Sent, it "succeeds" moving nothing, and that waste refused the asset for an hour: every later
 * settle was 429 asset_throttled (issue 39, the faults test on a busy machine).
 */
import { afterAll, expect, test } from "vitest";
import {
  type AnvilInstance,
  type Devnet,
  prepareDevnet,
  startAnvil,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { facilitatorOn, handlePost } from "./helpers/facilitator.js";

let devnet: Devnet | undefined;
let anvil: AnvilInstance | undefined;

afterAll(async () => {
  await devnet?.stop();
  await anvil?.stop();
});

/** A bare anvil on `port`, retried briefly while the old node's port is released. */
async function anvilOn(port: number): Promise<AnvilInstance> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startAnvil({ port });
    } catch (error) {
      if (attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

test("restarted without the token: asset_not_contract and nothing sent; once set up, settles succeed", async () => {
  devnet = await startDevnet();
  const first = devnet;
  const f = facilitatorOn(first);
  const payer = first.payers[0];
  if (!payer) throw new Error("no payer");
  const settle = async () => handlePost(f, "/settle", await signSampleRequest(first, { payer }));
  // The asset's code is seen (and cached) while the chain is whole.
  expect(await settle()).toMatchObject({ status: 200, body: { success: true } });

  await first.stop();
  devnet = undefined;
  anvil = await anvilOn(Number(new URL(first.rpcUrl).port));
  const bare = await settle();
  expect(bare).toMatchObject({ status: 400, body: { error: "asset_not_contract" } });
  const nonce = await fetch(anvil.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getTransactionCount",
      params: [first.facilitator.address, "latest"],
    }),
  }).then((r) => r.json() as Promise<{ result: string }>);
  expect(BigInt(nonce.result), "nothing was sent to the bare chain").toBe(0n);

  // The setup runs: the token is back, and it is not throttled.
  await prepareDevnet(anvil.rpcUrl, anvil.chainId);
  expect(await settle()).toMatchObject({ status: 200, body: { success: true } });
}, 60_000);
