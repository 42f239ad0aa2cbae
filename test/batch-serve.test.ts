/**
 * batch-settlement through the real `facilitator serve` (a child process, keys only in its
 * environment), both ways a seller can run it: with our receiver authorizer signing its claims
 * (`/supported` says which key), and with a seller that signs its own claims while our serve holds
 * no authorizer key (`/supported` then names none). The official Express server scheme and
 * channel manager, and an official buyer through @x402/fetch; a replayed payment header is
 * refused; balances exact to the unit.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { officialBuyer, officialSeller } from "./helpers/batch.js";
import { tokenBalance } from "./helpers/chain.js";
import { runCli } from "./helpers/run-cli.js";
import { type Serving, startServe } from "./helpers/serve.js";

const PRICE = 1_000n;
const REQUESTS = 8;

let devnet: Devnet;
let stateDir: string;
const servers: Server[] = [];
const serves: Serving[] = [];

beforeAll(async () => {
  devnet = await startDevnet();
  stateDir = mkdtempSync(path.join(os.tmpdir(), "facilitator-batch-serve-"));
}, 60_000);

afterAll(async () => {
  for (const server of servers) server.close();
  for (const serving of serves) {
    serving.child.kill("SIGTERM");
    await serving.exited;
  }
  await devnet?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

async function serve(name: string, env: Record<string, string>): Promise<Serving> {
  const serving = await startServe(["--rpc-url", devnet.rpcUrl], {
    XDG_STATE_HOME: path.join(stateDir, name),
    FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
    ...env,
  });
  serves.push(serving);
  return serving;
}

async function supportedKind(serving: Serving) {
  const body = (await (await fetch(`${serving.url}/supported`)).json()) as {
    kinds: { scheme: string; network: string; extra?: Record<string, unknown> }[];
  };
  return body.kinds.find((k) => k.scheme === "batch-settlement" && k.network === devnet.network);
}

describe.each([
  ["our receiver authorizer signs the seller's claims", "ours", 2],
  ["the seller signs its own claims; our serve holds no authorizer key", "own", 3],
] as const)("%s", (_title, who, payerIndex) => {
  test(`${REQUESTS} paid requests over one deposit, a replay refused, claimed and settled to the unit`, async () => {
    const ourAuthorizer = devAccounts[7] as DevAccount;
    // A receiver of its own, so the balance checks see only this test's payments.
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    // Our authorizer is offered only with an API key bound to the seller: its refunds need it.
    const apiKey = `seller-${generatePrivateKey().slice(2, 34)}`;
    const keysFile = path.join(stateDir, `${who}-api-keys.json`);
    writeFileSync(
      keysFile,
      JSON.stringify({
        anonymous: true,
        keys: [{ name: "shop", key: apiKey, receivers: [payTo] }],
      }),
    );
    const serving = await serve(
      who,
      who === "ours"
        ? {
            FACILITATOR_RECEIVER_AUTHORIZER_KEY: ourAuthorizer.privateKey,
            FACILITATOR_API_KEYS_FILE: keysFile,
          }
        : {},
    );
    const kind = await supportedKind(serving);
    if (who === "ours") {
      expect(kind?.extra).toEqual({ receiverAuthorizer: ourAuthorizer.address });
    } else {
      expect(kind).toBeDefined();
      expect(kind?.extra?.receiverAuthorizer).toBeUndefined();
    }
    // The keys never show in what serve prints.
    expect(serving.stderr()).not.toContain(ourAuthorizer.privateKey.slice(2));
    expect(serving.stderr()).not.toContain(apiKey);

    const { url, manager } = await officialSeller(devnet, serving.url, servers, {
      payTo,
      price: PRICE,
      ...(who === "own" ? { ownSigner: generatePrivateKey() } : { apiKey }),
    });
    const payer = devnet.payers[payerIndex] as DevAccount;
    const { pay, sent } = officialBuyer(devnet, payer);
    const payerBefore = await tokenBalance(devnet, payer.address);
    for (let i = 0; i < REQUESTS; i++) {
      const response = await pay(`${url}/metered`);
      expect(response.status, await response.clone().text()).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
    }
    // The last voucher again: the seller already charged it, so it buys nothing.
    const replay = await fetch(`${url}/metered`, { headers: sent.at(-1) });
    expect(replay.status).toBe(402);

    const { claims, settle } = await manager.claimAndSettle();
    expect(claims.length).toBeGreaterThan(0);
    expect(settle?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await tokenBalance(devnet, payTo)).toBe(BigInt(REQUESTS) * PRICE);
    // The payer paid its deposit; what it did not spend stays in the channel for it.
    const spent = payerBefore - (await tokenBalance(devnet, payer.address));
    expect(spent).toBeGreaterThanOrEqual(BigInt(REQUESTS) * PRICE);
    const refunds = await manager.refund();
    expect(refunds.length).toBe(1);
    expect(payerBefore - (await tokenBalance(devnet, payer.address))).toBe(
      BigInt(REQUESTS) * PRICE,
    );
  }, 90_000);
});

describe("the receiver authorizer key", () => {
  test("is not offered on /supported while no API key names a seller whose refunds it may sign", async () => {
    const authorizer = devAccounts[7] as DevAccount;
    const serving = await serve("unoffered", {
      FACILITATOR_RECEIVER_AUTHORIZER_KEY: authorizer.privateKey,
    });
    const kind = await supportedKind(serving);
    expect(kind).toBeDefined();
    expect(kind?.extra?.receiverAuthorizer).toBeUndefined();
  });

  test("an API keys file with a mistake stops serve at start, naming the entry and never the key", async () => {
    const file = path.join(stateDir, "bad-keys.json");
    const key = "short-but-secret";
    writeFileSync(file, JSON.stringify({ keys: [{ name: "shop", key, receivers: ["0x12"] }] }));
    const run = await runCli(["serve", "--port", "0", "--api-keys-file", file], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      XDG_STATE_HOME: path.join(stateDir, "bad-keys"),
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `--api-keys-file ${file}: keys[0]: shop's key must be at least 24 characters`,
    );
    expect(run.stdout + run.stderr).not.toContain(key);
  });

  test("doctor names its address, never its key; one that is also the settlement key is refused by doctor and by serve", async () => {
    const authorizer = devAccounts[7] as DevAccount;
    const env = {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      XDG_STATE_HOME: path.join(stateDir, "doctor"),
      FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
    };
    const fine = await runCli(["doctor", "--json"], {
      ...env,
      FACILITATOR_RECEIVER_AUTHORIZER_KEY: authorizer.privateKey,
    });
    expect(fine.stdout).toContain(`receiver authorizer ${authorizer.address}`);
    const clash = { ...env, FACILITATOR_RECEIVER_AUTHORIZER_KEY: devnet.facilitator.privateKey };
    const refused = await runCli(["doctor", "--json"], clash);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/is also a settlement key/);
    const serving = await runCli(["serve", "--port", "0"], clash);
    expect(serving.code).toBe(2);
    expect(serving.stderr).toMatch(/is also a settlement key/);
    for (const run of [fine, refused, serving]) {
      const printed = run.stdout + run.stderr;
      expect(printed).not.toContain(authorizer.privateKey.slice(2, 20));
      expect(printed).not.toContain(devnet.facilitator.privateKey.slice(2, 20));
    }
  });
});
