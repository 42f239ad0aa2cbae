/**
 * EIP-2612 permit payments in the x402x dialect (`authorizationType: "permit"`) with one of our
 * settlement accounts as the spender: permit, then transferFrom, as one settlement. On the
 * devnet's EIP-2612 token; the crash between the two transactions is a real kill -9 of `serve`.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Address, createTestClient, erc20Abi, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signPermitRequest } from "../src/evm/devnet/sign-permit.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientsOf } from "./helpers/permit2.js";
import { send, startServe } from "./helpers/serve.js";

const AMOUNT = 10_000n;

/** An x402x-style request: x402 v2 here (the method does not depend on the version). */
const permitRequest = signPermitRequest;

const balanceOf = (devnet: Devnet, who: Address) =>
  clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

const sentBy = (devnet: Devnet, who: Address) =>
  clientsOf(devnet).publicClient.getTransactionCount({ address: who, blockTag: "pending" });

describe("x402x permit payments, the facilitator as spender", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("verified, then permit and transferFrom: paid once; a replay is nonce_already_used", async () => {
    const facilitator = facilitatorOn(devnet);
    const payer = devnet.payers[0] as DevAccount;
    const request = await permitRequest(devnet, payer);
    expect((await handleVerify(facilitator, request)).body).toMatchObject({
      success: true,
      payer: payer.address,
    });
    const before = await balanceOf(devnet, devnet.payee.address);
    const sent = await sentBy(devnet, devnet.facilitator.address);
    const replies = await Promise.all([1, 2, 3, 4].map(() => handleSettle(facilitator, request)));
    expect(replies.filter((r) => r.body.success)).toHaveLength(1);
    expect(await balanceOf(devnet, devnet.payee.address)).toBe(before + AMOUNT);
    // Two transactions: the permit, then the transfer.
    expect(await sentBy(devnet, devnet.facilitator.address)).toBe(sent + 2);
    expect((await handleSettle(facilitator, request)).body).toMatchObject({
      success: false,
      error: "nonce_already_used",
    });
  });

  test.each([
    ["spender is payTo, as x402x's client signs it", "spender_mismatch", "invalid_spender_address"],
    ["signed by another key", "invalid_signature", "invalid_permit_signature"],
    ["deadline passed", "authorization_expired", "permit_expired"],
    [
      "value differs from the amount",
      "amount_mismatch",
      "invalid_exact_evm_payload_authorization_value",
    ],
    [
      "a nonce the token is not at",
      "simulation_failed",
      "invalid_exact_evm_transaction_simulation_failed",
    ],
  ] as const)("%s: %s", async (name, code, reason) => {
    const payer = devnet.payers[1] as DevAccount;
    const options = name.startsWith("spender")
      ? { spender: devnet.payee.address }
      : name.startsWith("signed")
        ? { signer: devnet.payers[2] as DevAccount }
        : name.startsWith("deadline")
          ? { deadline: BigInt(Math.floor(Date.now() / 1000)) }
          : name.startsWith("value")
            ? { value: AMOUNT + 1n }
            : { nonce: 7n };
    const request = await permitRequest(devnet, payer, options);
    const facilitator = facilitatorOn(devnet);
    expect((await handleVerify(facilitator, request)).body).toMatchObject({ error: code });
    const x402 = await handleVerify(facilitator, {
      x402Version: 2,
      paymentPayload: request.payload,
      paymentRequirements: request.requirements,
    });
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });
  });

  test("requirements.paymentType naming another method is refused", async () => {
    const request = await permitRequest(devnet, devnet.payers[1] as DevAccount);
    const requirements = { ...request.requirements, paymentType: "eip3009" };
    expect(
      (await handleVerify(facilitatorOn(devnet), { payload: request.payload, requirements })).body,
    ).toMatchObject({ error: "transfer_method_mismatch" });
  });

  test("waitUntil simulated says why a two-transaction payment cannot be dry-run", async () => {
    const request = await permitRequest(devnet, devnet.payers[1] as DevAccount);
    const reply = await handleSettle(facilitatorOn(devnet), { ...request, waitUntil: "simulated" });
    expect(reply.body).toMatchObject({ success: false, error: "invalid_request" });
    expect(String(reply.body.message)).toMatch(/2 transactions \(permit, then the transfer\)/);
  });
});

describe("a crash between the permit and the transfer", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("kill -9 after the permit was broadcast: the retry follows it, sends only the transfer, pays once", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-permit-crash-"));
    const key = path.join(dir, "facilitator.key");
    writeFileSync(key, devnet.facilitator.privateKey, { mode: 0o600 });
    const args = [
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      key,
      "--journal",
      path.join(dir, "journal.jsonl"),
    ];
    const payer = devnet.payers[3] as DevAccount;
    const request = await permitRequest(devnet, payer);
    const body = JSON.stringify(request);
    const before = await balanceOf(devnet, devnet.payee.address);
    const sentBefore = await sentBy(devnet, devnet.facilitator.address);

    const first = await startServe(args);
    const settling = send(first.url, {
      path: "/settle",
      body,
      headers: { "content-type": "application/json" },
    });
    for (let i = 0; i < 200; i++) {
      if ((await sentBy(devnet, devnet.facilitator.address)) > sentBefore) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // The permit is in the pool, not mined (manual mining): the process dies here.
    expect(await sentBy(devnet, devnet.facilitator.address)).toBe(sentBefore + 1);
    first.child.kill("SIGKILL");
    await first.exited;
    expect((await settling).error).toBeDefined();
    // The permit is still unmined when the new process retries: it must follow that one, not
    // sign another. Blocks come every 200 ms once the retry is under way.
    const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    const second = await startServe(args);
    let mining = true;
    const miner = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      while (mining) {
        await anvil.mine({ blocks: 1 });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    try {
      const retry = await send(second.url, {
        path: "/settle",
        body,
        headers: { "content-type": "application/json" },
      });
      expect(retry.status, retry.body).toBe(200);
      expect(JSON.parse(retry.body ?? "{}")).toMatchObject({ success: true });
      expect(await balanceOf(devnet, devnet.payee.address)).toBe(before + AMOUNT);
      // The permit once, the transfer once: nothing sent twice.
      expect(await sentBy(devnet, devnet.facilitator.address)).toBe(sentBefore + 2);
      const hash = JSON.parse(retry.body ?? "{}").transactionHash as Hex;
      const receipt = await clientsOf(devnet).publicClient.getTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
    } finally {
      mining = false;
      await miner;
      second.child.kill("SIGKILL");
    }
  }, 60_000);
});
