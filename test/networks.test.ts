/**
 * Issue 9: only the networks the operator chose. With an RPC configured, a payment for any other
 * network (Base, Ethereum, Polygon, v1 "base") is unsupported_network in both dialects, from the
 * CLI and through the HTTP handler, and nothing is sent with the settlement key; /supported and
 * what verify/settle accept are the same set.
 *
 * This machine is offline: the built-in public RPCs cannot be reached here. Before the fix the
 * attack below therefore answered chain_unavailable (online it would have been a transaction on
 * that network); the assertions do not depend on reaching any public RPC.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { facilitatorFrom } from "../src/cli/facilitator/facilitator.js";
import { loadConfig } from "../src/cli/settings/config.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { createHandler, type HttpRequest } from "../src/http/handler.js";
import { type Dialect, requestOn as onNetwork } from "./helpers/network-request.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";

let devnet: Devnet;
let dir: string;
/** Built from CLI flags exactly as `facilitator serve --rpc-url <devnet>` builds it. */
let served: Facilitator;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-networks-test-")),
  ]);
  const config = loadConfig(
    { rpcUrl: [devnet.rpcUrl], journal: path.join(dir, "journal.jsonl") },
    { FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey },
  );
  served = await facilitatorFrom(config, true);
});

afterAll(async () => {
  removeCliJournals();
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const payer = (i: number) => {
  const account = devnet.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

const requestOn = (network: string, dialect: Dialect, payerIndex = 0) =>
  onNetwork(devnet, network, dialect, payerIndex);

const ATTACKED = ["eip155:8453", "eip155:1", "eip155:137", "base"] as const;

const settlerNonce = () =>
  createPublicClient({ transport: http(devnet.rpcUrl) }).getTransactionCount({
    address: devnet.facilitator.address,
    blockTag: "pending",
  });

const post = (url: string, body: unknown): HttpRequest => ({
  method: "POST",
  url,
  headers: { "content-type": "application/json" },
  body: Buffer.from(JSON.stringify(body)),
});

/** The message names the network as the caller wrote it, what is served, and how to add it. */
function expectNotServedMessage(message: unknown, network: string): void {
  expect(message).toEqual(expect.stringMatching(/^\S+ \([^)]+\) is not served here: /));
  expect(String(message).startsWith(`${network} (`), String(message)).toBe(true);
  expect(message).toEqual(expect.stringContaining(devnet.network));
  expect(message).toEqual(expect.stringContaining("--rpc-url"));
  expect(message).toEqual(expect.stringContaining("FACILITATOR_RPC_URL"));
}

describe("a network nobody configured, with --rpc-url at the devnet", () => {
  it("over HTTP: verify and settle are unsupported_network in both dialects; nothing is sent", async () => {
    const handle = createHandler(served);
    const nonceBefore = await settlerNonce();
    for (const network of ATTACKED) {
      for (const route of ["/verify", "/settle"]) {
        const reference = await handle(post(route, await requestOn(network, "reference")));
        expect(reference.status, `${route} ${network}`).toBe(400);
        const body = JSON.parse(reference.body);
        expect(body).toMatchObject({ success: false, error: "unsupported_network" });
        expectNotServedMessage(body.message, network);

        const x402 = await handle(post(route, await requestOn(network, "x402")));
        expect(x402.status, `${route} ${network} (x402)`).toBe(200);
        expect(JSON.parse(x402.body)).toMatchObject(
          route === "/verify"
            ? { isValid: false, invalidReason: "invalid_network" }
            : { success: false, errorReason: "invalid_network", transaction: "", network },
        );
      }
    }
    expect(await settlerNonce()).toBe(nonceBefore);
  });

  it("from the CLI: unsupported_network as JSON on stdout, exit 2 (configuration); nothing is sent", async () => {
    const nonceBefore = await settlerNonce();
    const keyFile = path.join(dir, "settler.key");
    await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
    const runs = ATTACKED.flatMap((network) =>
      (["reference", "x402"] as const).flatMap((dialect) =>
        (["verify", "settle"] as const).map(async (op) => {
          const file = path.join(dir, `${op}-${dialect}-${network.replace(":", "-")}.json`);
          await writeFile(file, JSON.stringify(await requestOn(network, dialect)));
          const args = [op, file, "--rpc-url", devnet.rpcUrl];
          if (op === "settle") args.push("--private-key-file", keyFile);
          return { op, dialect, network, run: await runCli(args) };
        }),
      ),
    );
    for (const { op, dialect, network, run } of await Promise.all(runs)) {
      const label = `${op} ${dialect} ${network}: ${run.stdout} ${run.stderr}`;
      // Each names a chain (eip155:N in v2, "base" in v1): what is missing is an RPC for it.
      expect(run.code, label).toBe(2);
      const body = JSON.parse(run.stdout);
      if (dialect === "reference") {
        expect(body, label).toMatchObject({ success: false, error: "unsupported_network" });
        expectNotServedMessage(body.message, network);
      } else if (op === "verify") {
        expect(body, label).toMatchObject({ isValid: false, invalidReason: "invalid_network" });
      } else {
        expect(body, label).toMatchObject({ success: false, errorReason: "invalid_network" });
      }
    }
    expect(await settlerNonce()).toBe(nonceBefore);
  });

  it("the configured chain itself is still served", async () => {
    const handle = createHandler(served);
    const ok = await handle(post("/verify", await requestOn(devnet.network, "reference", 1)));
    expect(JSON.parse(ok.body)).toEqual({ success: true, payer: payer(1).address });
  });
});

describe("where the configured RPCs come from", () => {
  it("FACILITATOR_RPC_URL and rpcUrls in the config file count as configured", async () => {
    const file = path.join(dir, "base-from-env.json");
    await writeFile(file, JSON.stringify(await requestOn("eip155:8453", "reference")));
    const config = path.join(dir, "config.json");
    await writeFile(config, JSON.stringify({ rpcUrls: [devnet.rpcUrl] }));
    const runs = await Promise.all([
      runCli(["verify", file], { FACILITATOR_RPC_URL: devnet.rpcUrl }),
      runCli(["verify", file, "--config", config]),
      runCli(["verify", file], { FACILITATOR_CONFIG: config }),
    ]);
    for (const run of runs) {
      expect(run.code, run.stdout + run.stderr).toBe(2);
      const body = JSON.parse(run.stdout);
      expect(body).toMatchObject({ success: false, error: "unsupported_network" });
      expectNotServedMessage(body.message, "eip155:8453");
    }
  });

  it("--public-rpcs or FACILITATOR_PUBLIC_RPCS=1 also serves well-known networks", async () => {
    // Offline here: Base's public RPC cannot be reached, so the answer is chain_unavailable (exit 3)
    // naming the network and the endpoint. Online it would be a verify verdict on Base (the
    // signature is for the devnet, so a rejection, exit 1). Either way, not unsupported_network.
    const file = path.join(dir, "base-public.json");
    await writeFile(file, JSON.stringify(await requestOn("eip155:8453", "reference")));
    const runs = await Promise.all([
      runCli(["verify", file, "--rpc-url", devnet.rpcUrl, "--public-rpcs"]),
      runCli(["verify", file, "--rpc-url", devnet.rpcUrl], { FACILITATOR_PUBLIC_RPCS: "1" }),
    ]);
    for (const run of runs) {
      const body = JSON.parse(run.stdout);
      expect(body.error, run.stdout).not.toBe("unsupported_network");
      if (body.error === "chain_unavailable") {
        expect(run.code).toBe(3);
        expect(body.message.startsWith("eip155:8453 via https://mainnet.base.org: ")).toBe(true);
      } else {
        expect(run.code, run.stdout).toBe(1);
      }
    }
    const local = path.join(dir, "local-public.json");
    await writeFile(local, JSON.stringify(await requestOn(devnet.network, "reference", 2)));
    const run = await runCli(["verify", local, "--rpc-url", devnet.rpcUrl, "--public-rpcs"]);
    expect(JSON.parse(run.stdout)).toEqual({ success: true, payer: payer(2).address });
  });
});
