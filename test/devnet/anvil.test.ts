import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { createPublicClient, createTestClient, createWalletClient, http, parseEther } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEV_MNEMONIC,
  devAccounts,
  facilitatorAccount,
  payeeAccount,
  payerAccounts,
} from "../../src/evm/devnet/accounts.js";
import { type AnvilInstance, startAnvil } from "../../src/evm/devnet/anvil.js";
import { devnetChain } from "../../src/evm/devnet/setup.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed child of a process that has exited stays a zombie until init reaps it.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return process.platform !== "linux";
  }
}

function clients(anvil: AnvilInstance) {
  const chain = devnetChain(anvil.rpcUrl, anvil.chainId);
  const transport = http(anvil.rpcUrl, { retryCount: 0 });
  return {
    publicClient: createPublicClient({ chain, transport, pollingInterval: 50, cacheTime: 0 }),
    testClient: createTestClient({ chain, transport, mode: "anvil" }),
    wallet: createWalletClient({
      chain,
      transport,
      account: privateKeyToAccount(payerAccounts[0]?.privateKey ?? "0x"),
    }),
  };
}

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

// Every instance a test starts is stopped even when the test fails.
const started: AnvilInstance[] = [];
async function start(options?: Parameters<typeof startAnvil>[0]): Promise<AnvilInstance> {
  const anvil = await startAnvil(options);
  started.push(anvil);
  return anvil;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((anvil) => anvil.stop()));
});

describe("startAnvil", () => {
  it("serves JSON-RPC with the requested chain id on a port it picked", async () => {
    const anvil = await start({ chainId: 4242 });
    expect(anvil.chainId).toBe(4242);
    expect(anvil.port).toBeGreaterThan(0);
    expect(anvil.rpcUrl).toBe(`http://127.0.0.1:${anvil.port}`);
    const { publicClient } = clients(anvil);
    expect(await publicClient.getChainId()).toBe(4242);
  });

  it("defaults to chain id 31337 and listens on the port it is given", async () => {
    const port = await freePort();
    const anvil = await start({ port });
    expect(anvil.port).toBe(port);
    expect(anvil.chainId).toBe(31337);
    expect(await clients(anvil).publicClient.getChainId()).toBe(31337);
  });

  it("stop() ends the process, and can be called again", async () => {
    const anvil = await start();
    expect(isRunning(anvil.pid)).toBe(true);
    await anvil.stop();
    expect(isRunning(anvil.pid)).toBe(false);
    await anvil.stop();
    await expect(clients(anvil).publicClient.getChainId()).rejects.toThrow();
  });

  it("takes anvil down with it when the process exits without calling stop()", async () => {
    const script = [
      'import { startAnvil } from "./src/evm/devnet/anvil.ts";',
      "const anvil = await startAnvil();",
      "console.log(anvil.pid);",
      "process.exit(0);",
    ].join("\n");
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { cwd: new URL("../..", import.meta.url) },
    );
    const pid = Number(stdout.trim());
    expect(pid).toBeGreaterThan(0);
    const deadline = Date.now() + 5_000;
    while (isRunning(pid) && Date.now() < deadline) await sleep(50);
    expect(isRunning(pid)).toBe(false);
  });

  it("fails with anvil's output, without private keys, when the port is taken", async () => {
    const first = await start();
    const error: unknown = await startAnvil({ port: first.port }).then(
      () => new Error("second anvil started on a taken port"),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/^anvil exited before it was ready/);
    expect(message).toMatch(/in use/i);
    for (const account of devAccounts) {
      expect(message.toLowerCase()).not.toContain(account.privateKey.slice(2).toLowerCase());
    }
    expect(message).not.toContain(DEV_MNEMONIC);
  });

  it("auto mode mines each transaction at once, without waiting for the heartbeat", async () => {
    // A long heartbeat, so only automine can explain a transaction mined within milliseconds.
    const anvil = await start({ blockTimeSeconds: 60 });
    const { publicClient, wallet } = clients(anvil);

    // anvil answers eth_sendRawTransaction just before the block is stored, so the receipt may
    // take a moment to appear: poll for it.
    for (let i = 0; i < 3; i++) {
      const sentAt = Date.now();
      const hash = await wallet.sendTransaction({ to: payeeAccount.address, value: 1n });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 10 });
      expect(receipt.status).toBe("success");
      expect(Date.now() - sentAt).toBeLessThan(2_000);
      const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
      expect(block.transactions).toEqual([hash]);
    }

    // blockTimeSeconds is honoured: no heartbeat block within a second and a half.
    const before = await publicClient.getBlockNumber();
    await sleep(1_500);
    expect(await publicClient.getBlockNumber()).toBe(before);
  });

  it("auto mode gives an idle chain a block every second, timed by the wall clock", async () => {
    const anvil = await start();
    const { publicClient } = clients(anvil);
    const before = await publicClient.getBlockNumber();
    await sleep(2_600);
    const latest = await publicClient.getBlock();
    expect(latest.number - before).toBeGreaterThanOrEqual(2n);
    expect(latest.number - before).toBeLessThanOrEqual(4n);
    const now = Date.now() / 1000;
    expect(Number(latest.timestamp)).toBeGreaterThanOrEqual(Math.floor(now) - 2);
    expect(Number(latest.timestamp)).toBeLessThanOrEqual(Math.ceil(now) + 1);
  });

  it("manual mode mines nothing until evm_mine", async () => {
    const anvil = await start({ mining: "manual" });
    const { publicClient, testClient, wallet } = clients(anvil);
    const startBlock = await publicClient.getBlockNumber();

    const hash = await wallet.sendTransaction({ to: payeeAccount.address, value: parseEther("1") });
    await sleep(1_500);
    expect(await publicClient.getBlockNumber()).toBe(startBlock);
    await expect(publicClient.getTransactionReceipt({ hash })).rejects.toThrow(
      /could not be found/,
    );

    await testClient.mine({ blocks: 1 });
    expect(await publicClient.getBlockNumber()).toBe(startBlock + 1n);
    const receipt = await publicClient.getTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(receipt.blockNumber).toBe(startBlock + 1n);
  });
});

describe("dev accounts", () => {
  it("are anvil's funded accounts, derived from the test mnemonic, in the devnet's roles", async () => {
    const anvil = await start();
    const { publicClient } = clients(anvil);
    const nodeAccounts = await createWalletClient({
      transport: http(anvil.rpcUrl, { retryCount: 0 }),
    }).getAddresses();
    expect(devAccounts).toHaveLength(10);
    for (const [index, account] of devAccounts.entries()) {
      const derived = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index });
      expect(account.address).toBe(derived.address);
      expect(privateKeyToAccount(account.privateKey).address).toBe(account.address);
      expect(nodeAccounts[index]?.toLowerCase()).toBe(account.address.toLowerCase());
      expect(await publicClient.getBalance({ address: account.address })).toBeGreaterThan(0n);
    }
    expect(facilitatorAccount).toBe(devAccounts[0]);
    expect(payerAccounts).toEqual([1, 2, 3, 4, 5].map((i) => devAccounts[i]));
    expect(payeeAccount).toBe(devAccounts[9]);
  });

  it("do not reveal their private keys when logged or serialised", async () => {
    const { inspect } = await import("node:util");
    const account = payerAccounts[0];
    if (!account) throw new Error("no payer");
    const key = account.privateKey.slice(2);
    expect(JSON.stringify({ payers: payerAccounts })).not.toContain(key);
    expect(inspect(payerAccounts, { depth: 5 })).not.toContain(key);
    expect(JSON.stringify(account)).toContain(account.address);
    // Spreading still gives both fields to code that needs the key.
    expect({ ...account }.privateKey).toBe(account.privateKey);
  });
});
