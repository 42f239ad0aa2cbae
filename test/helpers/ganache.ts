/**
 * A second node implementation for the tests: ganache 7.9 (npm `ganache`, in this process), with
 * the devnet's contracts placed by evm_setAccountCode (it has no anvil_setCode) and the devnet's dev
 * accounts (same mnemonic as anvil), so the devnet's payers, payee and facilitator key are funded
 * and the test USDC is where the devnet puts it. Ganache runs on Node 20 (Hardhat 3's EDR, the
 * other candidate, needs Node 22).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ganache from "ganache";
import solc from "solc";
import { type Address, getAddress, type Hex } from "viem";
import {
  DEV_MNEMONIC,
  type Devnet,
  MULTICALL3_ADDRESS,
  prepareDevnet,
  usdcAddressFor,
} from "../../src/evm/devnet/index.js";

const CONTRACTS_DIR = fileURLToPath(new URL("../../src/evm/devnet/contracts/", import.meta.url));
/** What a payment on ganache runs: the test USDC, and Multicall3 for the set-up and our reads. */
const SHANGHAI = { "TestUSDC.sol": "TestUSDC", "Multicall3.sol": "Multicall3" } as const;

/**
 * The devnet's artifacts are compiled for cancun; ganache 7.9 stops at shanghai (no MCOPY: the
 * cancun TestUSDC hits "invalid opcode"). These two are compiled again for shanghai, once per
 * source version (cached in the temporary directory: solc takes 8 s).
 */
function shanghaiCode(): Record<keyof typeof SHANGHAI, Hex> {
  const sources = Object.fromEntries(
    Object.keys(SHANGHAI).map((file) => [
      file,
      readFileSync(path.join(CONTRACTS_DIR, file), "utf8"),
    ]),
  );
  const hash = createHash("sha256").update(solc.version()).update(JSON.stringify(sources));
  const cacheDir = path.join(os.tmpdir(), "facilitator-ganache-contracts");
  const cache = path.join(cacheDir, `${hash.digest("hex").slice(0, 16)}.json`);
  try {
    return JSON.parse(readFileSync(cache, "utf8"));
  } catch {
    // Not compiled yet.
  }
  const input = {
    language: "Solidity",
    sources: Object.fromEntries(Object.entries(sources).map(([f, content]) => [f, { content }])),
    settings: {
      evmVersion: "shanghai",
      optimizer: { enabled: true, runs: 200 },
      metadata: { bytecodeHash: "none" },
      outputSelection: { "*": { "*": ["evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const code = Object.fromEntries(
    Object.entries(SHANGHAI).map(([file, name]) => [
      file,
      `0x${output.contracts[file]?.[name]?.evm.deployedBytecode.object}`,
    ]),
  ) as Record<keyof typeof SHANGHAI, Hex>;
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(`${cache}.${process.pid}`, JSON.stringify(code));
  renameSync(`${cache}.${process.pid}`, cache);
  return code;
}

export type GanacheDevnet = Devnet & {
  /** JSON-RPC straight to ganache: for evm_* calls a test makes as an operator would. */
  rpc(method: string, params?: unknown[]): Promise<unknown>;
};

export interface GanacheOptions {
  chainId?: number;
  /** Seconds between blocks, mined on the interval whether or not transactions wait. Default 1. */
  blockTimeSeconds?: number;
}

export async function startGanacheDevnet(options: GanacheOptions = {}): Promise<GanacheDevnet> {
  const chainId = options.chainId ?? 1337;
  const server = ganache.server({
    logging: { quiet: true },
    chain: { chainId, networkId: chainId },
    wallet: { mnemonic: DEV_MNEMONIC, totalAccounts: 10, defaultBalance: 10_000 },
    miner: { blockTime: options.blockTimeSeconds ?? 1 },
  });
  await server.listen(0, "127.0.0.1");
  const { port } = server.address() as AddressInfo;
  const rpcUrl = `http://127.0.0.1:${port}`;
  let id = 0;
  async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    const body = (await response.json()) as { result?: unknown; error?: { message: string } };
    if (body.error) throw new Error(`ganache ${method}: ${body.error.message}`);
    return body.result;
  }
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= server.close();
    return stopped;
  };
  try {
    const code = shanghaiCode();
    const swapped = new Map<Address, Hex>([
      [getAddress(usdcAddressFor(chainId)), code["TestUSDC.sol"]],
      [getAddress(MULTICALL3_ADDRESS), code["Multicall3.sol"]],
    ]);
    const info = await prepareDevnet(rpcUrl, chainId, {
      mining: "auto",
      setCode: (address: Address, bytecode: Hex) =>
        rpc("evm_setAccountCode", [address, swapped.get(getAddress(address)) ?? bytecode]),
    });
    // Devnet's `anvil` is what stops it; the tests here only read rpcUrl and stop().
    const anvil = {
      rpcUrl,
      host: "127.0.0.1",
      port,
      chainId,
      mining: "auto",
      pid: process.pid,
      stop,
    };
    return { ...info, anvil: anvil as Devnet["anvil"], stop, rpc };
  } catch (error) {
    await stop();
    throw error;
  }
}
