/**
 * `settlement_pending` as a seller's SDK reads it: a settle whose transaction is broadcast but not
 * mined before the confirm timeout (anvil with automine off), asked through @x402/core's
 * HTTPFacilitatorClient of our HTTP shell and of the reference facilitator (@x402/core +
 * @x402/evm 2.27, its confirmation timeout shortened). The reference has no HTTP server of its
 * own; it is served here as the SDK's example facilitator serves it (`res.json(result)`: 200 and
 * the SettleResponse as the body), which is the one wiring its docs give.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { createTestClient, http } from "viem";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientPayload, referenceFacilitator, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let ours: RunningServer;
let reference: Server;
let referenceUrl: string;

beforeAll(async () => {
  devnet = await startDevnet({ mining: "manual" });
  ours = await startServer(createHandler(facilitatorOn(devnet, { confirmTimeoutMs: 500 })), {
    port: 0,
  });
  const official = referenceFacilitator(devnet, devAccounts[6] as DevAccount, {
    confirmationTimeoutMs: 500,
  });
  reference = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    req.on("end", async () => {
      const { paymentPayload, paymentRequirements } = JSON.parse(raw);
      const result = await official.settle(paymentPayload, paymentRequirements);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(result));
    });
  });
  await new Promise<void>((resolve) => reference.listen(0, "127.0.0.1", resolve));
  referenceUrl = `http://127.0.0.1:${(reference.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await ours?.close();
  await new Promise((resolve) => reference?.close(resolve));
  await devnet?.stop();
});

/** A settle through the official client: what a seller's SDK gets back, or what it throws. */
async function settleThrough(url: string, payer: DevAccount) {
  const requirements = requirementsV2(devnet);
  const payload = await clientPayload(payer, requirements);
  const client = new HTTPFacilitatorClient({ url, timeoutMs: 30_000 });
  try {
    return { result: await client.settle(payload as never, requirements as never) };
  } catch (error) {
    return { thrown: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

test("a settle not confirmed in time reads, through the official client, as the reference's does", async () => {
  const theirs = await settleThrough(referenceUrl, devnet.payers[0] as DevAccount);
  const mine = await settleThrough(ours.url, devnet.payers[1] as DevAccount);
  await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

  // The reference's answer: resolved (not thrown), a failure the resource server may retry.
  expect(theirs.thrown).toBeUndefined();
  expect(theirs.result).toMatchObject({
    success: false,
    errorReason: "settlement_pending",
    network: devnet.network,
    payer: (devnet.payers[0] as DevAccount).address,
  });
  expect(theirs.result?.transaction).toMatch(/^0x[0-9a-f]{64}$/);

  // Ours: the same way, field for field.
  expect(mine.thrown).toBeUndefined();
  expect(mine.result).toMatchObject({
    success: false,
    errorReason: "settlement_pending",
    network: devnet.network,
    payer: (devnet.payers[1] as DevAccount).address,
  });
  expect(mine.result?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  expect(Object.keys(mine.result ?? {}).sort()).toEqual(Object.keys(theirs.result ?? {}).sort());
}, 60_000);
