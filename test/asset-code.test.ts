/**
 * Every settle asks afresh whether the asset has code (chain-restart.test.ts: a restarted chain
 * may lack it). It asks for the code's size, one 32-byte word, not the bytecode: eth_getCode
 * answered the devnet's USDC as 13 KB of JSON, read, parsed and dropped by every settle, which
 * was most of the CPU a settle gained since 61a385f (docs/performance.md). A node that will not
 * run the size call is asked eth_getCode, as before, and the check still refuses no code.
 * The devnet's anvil sits behind test/helpers/rpc-proxy.ts, which sees each call; payments are
 * the official x402 client's.
 */
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { beforeAll, expect, test } from "vitest";
import type { Devnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { proxiedDevnet } from "./helpers/proxied-devnet.js";
import type { RpcProxy } from "./helpers/rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const net = proxiedDevnet();
let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = net.devnet;
  proxy = await net.proxy({});
});

const facilitator = () =>
  new Facilitator({
    rpcUrls: [proxy.url],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });

/** An address nothing was deployed to. */
const NO_CODE: Address = "0x000000000000000000000000000000000000dEaD";

async function settle(f: Facilitator, index: number, asset?: Address) {
  const payer = devnet.payers[index % devnet.payers.length];
  if (!payer) throw new Error("no payers");
  const requirements = requirementsV2(devnet, asset ? { asset } : {});
  const payload = await clientPayload(payer, requirements);
  return handleSettle(f, { payload, requirements, waitUntil: "confirmed" });
}

/** The addresses eth_getCode is asked for while `run` runs, lower case. */
async function codesRead(run: () => Promise<void>): Promise<string[]> {
  const read: string[] = [];
  proxy.intercept = (method, params) => {
    if (method === "eth_getCode") read.push(String((params as unknown[])[0]).toLowerCase());
    return undefined;
  };
  try {
    await run();
  } finally {
    proxy.intercept = () => undefined;
  }
  return read;
}

test("a settle asks whether the asset has code without reading its bytecode", async () => {
  const f = facilitator();
  const read = await codesRead(async () => {
    for (const index of [0, 1]) {
      expect((await settle(f, index)).body).toMatchObject({ success: true });
    }
    // No code is still refused before anything is sent.
    expect((await settle(f, 2, NO_CODE)).body).toMatchObject({
      success: false,
      error: "asset_not_contract",
    });
  });
  // The payers' code is read (a contract wallet pays otherwise); the asset's never.
  expect(read).not.toContain(devnet.token.address.toLowerCase());
  expect(read).not.toContain(NO_CODE.toLowerCase());
}, 60_000);

test("a node that refuses the size call: eth_getCode as before, asked once, and no code refused", async () => {
  let refused = 0;
  const f = facilitator();
  const read = await codesRead(async () => {
    const counting = proxy.intercept;
    proxy.intercept = (method, params) => {
      counting(method, params);
      // A call without `to` creates a contract: some nodes (another VM) do not run one.
      const call = (params as readonly { to?: string }[] | undefined)?.[0];
      if (method === "eth_call" && !call?.to) {
        refused++;
        return { refuse: { code: -32000, message: "contract creation is not supported" } };
      }
      return undefined;
    };
    for (const index of [0, 1]) {
      expect((await settle(f, index)).body).toMatchObject({ success: true });
    }
    expect((await settle(f, 2, NO_CODE)).body).toMatchObject({
      success: false,
      error: "asset_not_contract",
    });
  });
  // Refused once, the chain's node is not asked the size call again (no round trip wasted).
  expect(refused).toBe(1);
  expect(read.filter((a) => a === devnet.token.address.toLowerCase())).toHaveLength(2);
  expect(read).toContain(NO_CODE.toLowerCase());
}, 60_000);
