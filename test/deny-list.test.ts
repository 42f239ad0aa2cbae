/**
 * The deny list (issue 25): a file of EVM and Solana addresses, payers and payees, refused at
 * verify and settle before any chain call, with address_denied and a message that names the list.
 * Each scheme's payer is read where the payment names it: EIP-3009 `authorization.from`, EIP-2612
 * `owner`, Permit2 and upto `permit2Authorization.from`, batch-settlement channels (deposit,
 * voucher, claim, settle), and a Solana transaction's transfer authority (decoded, no chain call).
 * The RPC here is a stub that counts every call: a refusal leaves it untouched. Then the CLI:
 * verify refuses, a bad list is a usage error, doctor shows the list's size and age, and serve
 * re-reads the list when it changes (keeping the old one when the new one is bad).
 */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { generateKeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DenyList, parseDenyList } from "../src/deny-list/deny-list.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";
import { post, send, startServe, waitForStderr } from "./helpers/serve.js";
import { buildPayment, randomAddress } from "./helpers/svm-build.js";

const NETWORK = "eip155:84532";
const SOLANA = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const TOKEN = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const BAD = "0x000000000000000000000000000000000000dEaD";
const PAYEE = "0x1111111111111111111111111111111111111111";
const PAYER = "0x2222222222222222222222222222222222222222";

let dir: string;
let rpc: Server;
let rpcUrl: string;
let calls = 0;
let solanaPayer: Awaited<ReturnType<typeof generateKeyPairSigner>>;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-deny-"));
  solanaPayer = await generateKeyPairSigner();
  // A node that counts every call; it answers eth_chainId (84532) and refuses the rest.
  rpc = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      calls += 1;
      const call = JSON.parse(body || "{}") as { id?: unknown; method?: string };
      const answer =
        call.method === "eth_chainId"
          ? { jsonrpc: "2.0", id: call.id, result: "0x14a34" }
          : { jsonrpc: "2.0", id: call.id, error: { code: -32000, message: "stub" } };
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => rpc.listen(0, "127.0.0.1", resolve));
  rpcUrl = `http://127.0.0.1:${(rpc.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => rpc.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
  removeCliJournals();
});

const requirements = (scheme = "exact", payTo = PAYEE, network = NETWORK) => ({
  scheme,
  network,
  amount: "10000",
  asset: TOKEN,
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: "USDC", version: "2" },
});

/** An x402 v2 request whose scheme payload is `payload` (its signatures are never looked at). */
const request = (
  payload: Record<string, unknown>,
  reqs: Omit<ReturnType<typeof requirements>, "extra"> & { extra: object } = requirements(),
) => ({
  paymentPayload: {
    x402Version: 2,
    accepted: { scheme: reqs.scheme, network: reqs.network },
    payload,
  },
  paymentRequirements: reqs,
});

const signature = `0x${"11".repeat(65)}`;
const eip3009 = (from: string) => ({
  signature,
  authorization: {
    from,
    to: PAYEE,
    value: "10000",
    validAfter: "0",
    validBefore: "9999999999",
    nonce: `0x${"22".repeat(32)}`,
  },
});
const permit2 = (from: string) => ({
  signature,
  permit2Authorization: {
    from,
    permitted: { token: TOKEN, amount: "10000" },
    spender: "0x4020615294c913F045dc10f0a5cdEbd86c280001",
    nonce: "1",
    deadline: "9999999999",
    witness: { to: PAYEE, validAfter: "0" },
  },
});
const channel = (payer: string, receiver = PAYEE) => ({
  payer,
  payerAuthorizer: payer,
  receiver,
  receiverAuthorizer: PAYEE,
  token: TOKEN,
  withdrawDelay: 900,
  salt: `0x${"00".repeat(32)}`,
});
const voucher = { channelId: `0x${"33".repeat(32)}`, maxClaimableAmount: "10000", signature };

function listed(...addresses: string[]): DenyList {
  const list = parseDenyList(addresses.join("\n"), "sanctions.txt");
  if (!(list instanceof DenyList)) throw new Error(list.error);
  return list;
}

const facilitatorDenying = (...addresses: string[]) =>
  new Facilitator({ rpcUrls: [rpcUrl], useDefaultRpcs: false, denyList: listed(...addresses) });

/** Verify and settle both answer address_denied naming the list, and no chain call is made. */
async function expectDenied(facilitator: Facilitator, body: unknown, role: RegExp) {
  const before = calls;
  const verified = await handleVerify(facilitator, body);
  const settled = await handleSettle(facilitator, body);
  expect(calls, "a chain call was made").toBe(before);
  for (const reply of [verified, settled]) {
    expect(reply.failure?.code).toBe("address_denied");
    expect(reply.failure?.message).toMatch(role);
    expect(reply.failure?.message).toContain("deny list (sanctions.txt)");
  }
  // The x402 dialect carries our reason.
  expect(verified.body).toMatchObject({ isValid: false, invalidReason: "address_denied" });
  expect(settled.body).toMatchObject({ success: false, errorReason: "address_denied" });
}

describe("refused before any chain call, for each way a payment names its payer", () => {
  const facilitator = () => facilitatorDenying(BAD);

  test("exact, EIP-3009: authorization.from (any letter case)", async () => {
    await expectDenied(facilitator(), request(eip3009(BAD.toLowerCase())), /the payer 0x/);
  });

  test("exact, EIP-2612 (x402x): authorization.owner", async () => {
    const payload = { signature, authorization: { owner: BAD, spender: PAYEE, value: "1" } };
    await expectDenied(facilitator(), request(payload), /the payer/);
  });

  test("exact, Permit2: permit2Authorization.from", async () => {
    await expectDenied(facilitator(), request(permit2(BAD)), /the payer/);
  });

  test("upto: permit2Authorization.from", async () => {
    await expectDenied(facilitator(), request(permit2(BAD), requirements("upto")), /the payer/);
  });

  test("batch-settlement: the channel's payer in a deposit and a voucher, a claim's channel, a sweep's receiver", async () => {
    const reqs = requirements("batch-settlement");
    const deposit = {
      type: "deposit",
      channelConfig: channel(BAD),
      voucher,
      deposit: { amount: "10000", authorization: {} },
    };
    await expectDenied(facilitator(), request(deposit, reqs), /the payer/);
    await expectDenied(
      facilitator(),
      request({ type: "voucher", channelConfig: channel(BAD), voucher }, reqs),
      /the payer/,
    );
    const claim = {
      type: "claim",
      claims: [
        {
          voucher: { channel: channel(PAYER), maxClaimableAmount: "1" },
          signature,
          totalClaimed: "0",
        },
        {
          voucher: { channel: channel(BAD), maxClaimableAmount: "1" },
          signature,
          totalClaimed: "0",
        },
      ],
    };
    await expectDenied(facilitator(), request(claim, reqs), /the payer/);
    await expectDenied(
      facilitator(),
      request({ type: "settle", receiver: BAD, token: TOKEN }, reqs),
      /the payee \(payTo\)/,
    );
  });

  test("the payee: requirements.payTo", async () => {
    await expectDenied(
      facilitator(),
      request(eip3009(PAYER), requirements("exact", BAD)),
      /the payee \(payTo\)/,
    );
  });

  test("Solana: the transfer's authority, decoded from the transaction", async () => {
    const feePayer = randomAddress();
    const transaction = await buildPayment({
      payer: solanaPayer,
      feePayer,
      mint: randomAddress(),
      payTo: randomAddress(),
      amount: 10_000n,
      blockhash: randomAddress(),
    });
    const reqs = {
      ...requirements("exact", randomAddress(), SOLANA),
      extra: { feePayer },
    };
    await expectDenied(
      facilitatorDenying(BAD, solanaPayer.address),
      request({ transaction }, reqs),
      new RegExp(`the payer ${solanaPayer.address}`),
    );
  });

  test("a Solana payee", async () => {
    const payTo = randomAddress();
    const reqs = { ...requirements("exact", payTo, SOLANA), extra: { feePayer: randomAddress() } };
    await expectDenied(
      facilitatorDenying(payTo),
      request({ transaction: "AAAA" }, reqs),
      /the payee/,
    );
  });

  test("someone not on the list goes on to the chain (the stub counts it)", async () => {
    const before = calls;
    const reply = await handleVerify(facilitator(), request(eip3009(PAYER)));
    expect(reply.failure?.code).not.toBe("address_denied");
    expect(calls).toBeGreaterThan(before);
  });
});

describe("the list's file", () => {
  test("one address a line, comments and blank lines; a bad line is named by number", () => {
    const list = parseDenyList(
      `# sanctions\n\n${BAD}  # a comment\n${randomAddress()}\r\n`,
      "list.txt",
    );
    expect(list instanceof DenyList && list.size).toBe(2);
    const bad = parseDenyList(`${BAD}\nnot an address\n`, "list.txt");
    expect(bad).toEqual({ error: expect.stringMatching(/^line 2 is not/) });
  });

  test("facilitator verify refuses a listed payer: exit 1, address_denied", async () => {
    const file = path.join(dir, "verify-list.txt");
    writeFileSync(file, `${BAD}\n`);
    const body = path.join(dir, "request.json");
    writeFileSync(body, JSON.stringify(request(eip3009(BAD))));
    const run = await runCli(["verify", body, "--rpc-url", rpcUrl, "--deny-list", file]);
    expect(run.code, run.stderr).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      isValid: false,
      invalidReason: "address_denied",
    });
    // A bad list stops the command before anything else: a usage error naming the line.
    writeFileSync(file, "0x1234\n");
    const bad = await runCli(["verify", body, "--rpc-url", rpcUrl, "--deny-list", file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/deny list .*line 1 is not/);
  });

  test("doctor shows the list's size and age", async () => {
    const file = path.join(dir, "doctor-list.txt");
    writeFileSync(file, `${BAD}\n${PAYER}\n`);
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000 - 60_000);
    utimesSync(file, twoHoursAgo, twoHoursAgo);
    const run = await runCli(["doctor", "--json", "--rpc-url", rpcUrl, "--deny-list", file]);
    const findings = (JSON.parse(run.stdout) as { findings: { area: string; message: string }[] })
      .findings;
    const deny = findings.find((f) => f.area === "deny");
    expect(deny?.message).toMatch(/2 addresses, changed 2 h ago/);
  });
});

describe("serve re-reads the list when it changes", () => {
  test("a payer added is refused without a restart; a bad new file keeps the old list, and says why", async () => {
    const file = path.join(dir, "serve-list.txt");
    writeFileSync(file, `${BAD}\n`);
    const serving = await startServe(
      ["--rpc-url", rpcUrl, "--journal", path.join(dir, "journal.jsonl"), "--deny-list", file],
      { FACILITATOR_RELOAD_POLL_MS: "50" },
    );
    try {
      const ask = async (payer: string) =>
        JSON.parse((await post(serving.url, JSON.stringify(request(eip3009(payer))))).body ?? "");
      expect(await ask(BAD)).toMatchObject({ invalidReason: "address_denied" });
      expect((await ask(PAYER)).invalidReason).not.toBe("address_denied");

      writeFileSync(file, `${BAD}\n${PAYER}\n`);
      expect(await waitForStderr(serving, /"event":"reloaded".*"addresses":2/, 5_000)).toBe(true);
      expect(await ask(PAYER)).toMatchObject({ invalidReason: "address_denied" });

      writeFileSync(file, `${PAYER}\nnonsense\n`);
      expect(await waitForStderr(serving, /"event":"reload_refused".*line 2/, 5_000)).toBe(true);
      // The old list is in force: both still refused.
      expect(await ask(BAD)).toMatchObject({ invalidReason: "address_denied" });
      expect(await ask(PAYER)).toMatchObject({ invalidReason: "address_denied" });
    } finally {
      serving.child.kill("SIGTERM");
      await serving.exited;
    }
  }, 30_000);

  test("a list rewritten in place (truncated, then written) never lets the listed payer through", async () => {
    const file = path.join(dir, "rewritten-list.txt");
    const full = `# sanctions\n${BAD}\n${PAYER}\n`;
    writeFileSync(file, full);
    const serving = await startServe(
      ["--rpc-url", rpcUrl, "--journal", path.join(dir, "journal-2.jsonl"), "--deny-list", file],
      { FACILITATOR_RELOAD_POLL_MS: "200" },
    );
    const seen = (event: string) => serving.stderr().split(`"event":"${event}"`).length - 1;
    const looks = () => serving.stderr().split(/"event":"reload/).length - 1;
    const last = () => serving.stderr().trim().split("\n").at(-1) ?? "";
    /** Writes `text` and waits until serve has looked at it (one more reload line in its log). */
    const step = async (text: string) => {
      const before = looks();
      writeFileSync(file, text);
      const until = Date.now() + 5_000;
      while (looks() === before && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(looks(), `${JSON.stringify(text)}: ${serving.stderr()}`).toBe(before + 1);
    };
    /** A settle in the reference dialect, where a refusal has its own status. */
    const settle = async (payer: string) => {
      const { paymentPayload, paymentRequirements } = request(eip3009(payer));
      const answer = await send(serving.url, {
        path: "/settle",
        body: JSON.stringify({ payload: paymentPayload, requirements: paymentRequirements }),
      });
      return { status: answer.status, reason: JSON.parse(answer.body ?? "{}").error };
    };
    const denied = { status: 403, reason: "address_denied" };
    try {
      expect(await settle(PAYER)).toEqual(denied);
      // `echo … > list`: the shell truncates the file, then the writer writes it, in pieces.
      await step("");
      expect(await settle(PAYER)).toEqual(denied);
      expect(last()).toMatch(/"reload_refused".*is empty/);
      await step("# sanc");
      expect(await settle(PAYER)).toEqual(denied);
      expect(last()).toMatch(/"reload_refused".*does not end with a newline/);
      // Cut at a line's end, before the payer's line: a shorter list waits for the file to settle.
      await step(`# sanctions\n${BAD}\n`);
      expect(await settle(PAYER)).toEqual(denied);
      expect(last()).toMatch(/"reload_waiting".*lets through/);
      await step(full);
      expect(last()).toMatch(/"reloaded".*"addresses":2/);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await settle(PAYER)).toEqual(denied);
      expect(seen("reloaded")).toBe(1);

      // An operator's removal applies once the file stays as it is; an empty list says so.
      await step(`${BAD}\n`);
      expect(await waitForStderr(serving, /"event":"reloaded".*"addresses":1/, 5_000)).toBe(true);
      expect((await settle(PAYER)).reason).not.toBe("address_denied");
      await step("# empty\n");
      expect(await waitForStderr(serving, /"event":"reloaded".*"addresses":0/, 5_000)).toBe(true);
      expect((await settle(BAD)).reason).not.toBe("address_denied");
    } finally {
      serving.child.kill("SIGTERM");
      await serving.exited;
    }
  }, 60_000);
});
