/**
 * A seller on the legacy x402-express 1.2.0 (x402 protocol v1) pointed at `facilitator serve` on
 * the devnet answering as Base Sepolia, paid by a buyer signing with that package's own v1 client
 * (`x402/client`), what issue 39 asks of `settlement_pending` (docs/serve.md, "Sizing
 * --confirm-timeout for sellers that do not retry"). The middleware and the client are the official
 * package bytes from the npm registry, checked against their pinned integrity
 * (test/helpers/x402-legacy.ts: two tarballs fetched once, kept in os.tmpdir()); the modules they
 * import come from this project's node_modules, and the seller's app is this project's Express 5
 * where 1.2.0 names ^4 (the middleware calls only what both have: req.header, res.status().json,
 * res.setHeader, writeHead/write/end). Nothing is mocked: the seller and the buyer run as their own
 * node processes, serve is the built CLI, the chain is anvil with blocks mined by the test.
 * Without the registry the test fails and says so; FACILITATOR_TEST_NO_REGISTRY=1 leaves it out.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTestClient, erc20Abi, type Hex, http, parseEventLogs } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type DevAccount,
  type Devnet,
  devAccounts,
  payerAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { type Serving, startServe } from "./helpers/serve.js";
import { legacyX402 } from "./helpers/x402-legacy.js";

const PRICE = 10_000n; // "$0.01" in USDC's 6 decimals
const WEATHER = { city: "Lisbon", forecast: "sunny" };

/**
 * x402-express's README quick start (a route priced in dollars on base-sepolia) with the
 * facilitator's URL as its third argument: two routes, each on its own serve.
 */
const SELLER = `import express from "express";
import { paymentMiddleware } from "x402-express";

const [payTo, waiting, impatient] = process.argv.slice(2);
const route = (path) => ({ [\`GET \${path}\`]: { price: "$0.01", network: "base-sepolia" } });
const app = express();
app.use(paymentMiddleware(payTo, route("/weather"), { url: waiting }));
app.use(paymentMiddleware(payTo, route("/pending"), { url: impatient }));
app.get("/weather", (req, res) => res.json(${JSON.stringify(WEATHER)}));
app.get("/pending", (req, res) => res.json(${JSON.stringify(WEATHER)}));
const server = app.listen(0, "127.0.0.1", () =>
  console.log(\`seller on http://127.0.0.1:\${server.address().port}\`),
);
`;

/**
 * For each URL (a JSON list on stdin, so that its modules load while the seller starts), its
 * unpaid 402 and the X-PAYMENT header the v1 client signs for it.
 */
const BUYER = `import { createPaymentHeader, selectPaymentRequirements } from "x402/client";
import { privateKeyToAccount } from "viem/accounts";

const keys = process.env.BUYER_KEYS.split(",");
let input = "";
for await (const chunk of process.stdin) input += chunk;
const signed = await Promise.all(
  JSON.parse(input).map(async (url, i) => {
    const unpaid = await fetch(url);
    const body = await unpaid.json();
    const requirements = selectPaymentRequirements(body.accepts, "base-sepolia", "exact");
    const header = await createPaymentHeader(privateKeyToAccount(keys[i]), 1, requirements);
    return { status: unpaid.status, body, header };
  }),
);
console.log(JSON.stringify(signed));
`;

interface Signed {
  status: number;
  body: { x402Version: number; error: string; accepts: Record<string, unknown>[] };
  header: string;
}

let devnet: Devnet;
let dir: string;
let home: string;
let waiting: Serving;
let impatient: Serving;
let seller: ChildProcess;
let sellerUrl: string;
let signed: Signed[];
const impatientKey = devAccounts[6] as DevAccount;
const payers = payerAccounts.slice(0, 2) as [DevAccount, DevAccount];

async function serveWith(key: DevAccount, confirmTimeout: string) {
  const file = path.join(dir, `${key.address}.key`);
  writeFileSync(file, key.privateKey, { mode: 0o600 });
  return startServe([
    "--rpc-url",
    devnet.rpcUrl,
    "--private-key-file",
    file,
    "--journal",
    path.join(dir, `${key.address}.jsonl`),
    "--confirm-timeout",
    confirmTimeout,
  ]);
}

function startSeller(): Promise<string> {
  seller = spawn(
    process.execPath,
    [path.join(home, "seller.mjs"), devnet.payee.address, waiting.url, impatient.url],
    { cwd: home, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /seller on (\S+)/.exec(output)?.[1];
      if (url) resolve(url);
    };
    seller.stdout?.on("data", read);
    seller.stderr?.on("data", read);
    seller.once("exit", (code) => reject(new Error(`the seller exited ${code}: ${output}`)));
  });
}

/** Starts the buyer; it signs once given the seller's URL. */
function startBuyer(): (sellerUrl: string) => Promise<Signed[]> {
  const buyer = spawn(process.execPath, [path.join(home, "buyer.mjs")], {
    cwd: home,
    env: { ...process.env, BUYER_KEYS: payers.map((p) => p.privateKey).join(",") },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  buyer.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  buyer.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<Signed[]>((resolve, reject) => {
    const timer = setTimeout(() => buyer.kill("SIGKILL"), 60_000);
    buyer.once("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(stdout));
      else reject(new Error(`the buyer exited ${code}: ${stderr}`));
    });
  });
  exited.catch(() => {}); // read when the seller is up
  return (url) => {
    buyer.stdin?.end(JSON.stringify([`${url}/weather`, `${url}/pending`]));
    return exited;
  };
}

const mine = () =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

const sentBy = (key: DevAccount, blockTag: "latest" | "pending") =>
  chainOf(devnet).getTransactionCount({ address: key.address, blockTag });

/** The paid request as a buyer's retrying client makes it: the same X-PAYMENT header each time. */
async function paid(route: string, header: string) {
  const response = await fetch(`${sellerUrl}${route}`, { headers: { "X-PAYMENT": header } });
  return {
    status: response.status,
    paymentResponse: response.headers.get("x-payment-response"),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** The payee's USDC Transfer events in `hash`'s receipt, as [from, to, value]. */
async function transfersIn(hash: Hex) {
  const receipt = await chainOf(devnet).getTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  return parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: "Transfer" }).map((t) => [
    t.address.toLowerCase(),
    t.args.from,
    t.args.to,
    t.args.value,
  ]);
}

describe.skipIf(process.env.FACILITATOR_TEST_NO_REGISTRY === "1")("x402-express 1.2.0", () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-x402-express-"));
    const ready = legacyX402().then((folder) => {
      home = folder;
      writeFileSync(path.join(home, "seller.mjs"), SELLER);
      writeFileSync(path.join(home, "buyer.mjs"), BUYER);
      return startBuyer();
    });
    let sign: Awaited<typeof ready>;
    [devnet, sign] = await Promise.all([startDevnet({ chainId: 84532, mining: "manual" }), ready]);
    [waiting, impatient] = await Promise.all([
      serveWith(devnet.facilitator, "60"),
      serveWith(impatientKey, "2"),
    ]);
    sellerUrl = await startSeller();
    signed = await sign(sellerUrl);
  }, 120_000);

  afterAll(async () => {
    const sellerGone = new Promise((resolve) => {
      if (!seller || seller.exitCode !== null) resolve(null);
      else seller.once("exit", resolve).kill();
    });
    waiting?.child.kill();
    impatient?.child.kill();
    await Promise.all([sellerGone, waiting?.exited, impatient?.exited, devnet?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the seller asks for payment with the v1 requirements the client signs", () => {
    for (const [i, route] of ["/weather", "/pending"].entries()) {
      expect(signed[i]?.status).toBe(402);
      expect(signed[i]?.body).toMatchObject({
        x402Version: 1,
        error: "X-PAYMENT header is required",
        accepts: [
          {
            scheme: "exact",
            network: "base-sepolia",
            maxAmountRequired: PRICE.toString(),
            resource: `${sellerUrl}${route}`,
            payTo: devnet.payee.address,
            asset: devnet.token.address,
            extra: { name: "USDC", version: "2" },
          },
        ],
      });
    }
  });

  test("a block inside --confirm-timeout: 200, the resource and X-PAYMENT-RESPONSE", async () => {
    const [payer] = payers;
    let mining = true;
    const miner = (async () => {
      while (mining) {
        await mine();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    let answer: Awaited<ReturnType<typeof paid>>;
    try {
      answer = await paid("/weather", signed[0]?.header ?? "");
    } finally {
      mining = false;
      await miner;
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toEqual(WEATHER);
    const settled = JSON.parse(Buffer.from(answer.paymentResponse ?? "", "base64").toString());
    expect(settled).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: "base-sepolia",
      payer: payer.address,
    });
    expect(await transfersIn(settled.transaction)).toEqual([
      [devnet.token.address.toLowerCase(), payer.address, devnet.payee.address, PRICE],
    ]);
  }, 60_000);

  test("no block before --confirm-timeout: 402 settlement_pending, paid once with the next block, the retry refused", async () => {
    const [, payer] = payers;
    const [sent, payee, paying] = await Promise.all([
      sentBy(impatientKey, "latest"),
      tokenBalance(devnet, devnet.payee.address),
      tokenBalance(devnet, payer.address),
    ]);
    const header = signed[1]?.header ?? "";
    const accepts = signed[1]?.body.accepts;

    // serve answers settlement_pending after 2 s; x402-express takes it as final: 402, no resource.
    const first = await paid("/pending", header);
    expect(first).toEqual({
      status: 402,
      paymentResponse: null,
      body: { x402Version: 1, error: "settlement_pending", accepts },
    });
    // Yet the transfer is broadcast: in the pool, not mined, nothing moved.
    expect(await sentBy(impatientKey, "pending")).toBe(sent + 1);
    expect(await sentBy(impatientKey, "latest")).toBe(sent);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee);

    // The next block pays it: the payer is charged for a request never served.
    await mine();
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + PRICE);
    expect(await tokenBalance(devnet, payer.address)).toBe(paying - PRICE);

    // The buyer's retry of the same header: 402 again, the authorization spent; nothing resent.
    const retry = await paid("/pending", header);
    expect(retry).toEqual({
      status: 402,
      paymentResponse: null,
      body: {
        x402Version: 1,
        error: "invalid_exact_evm_nonce_already_used",
        accepts,
        payer: payer.address,
      },
    });
    await mine();
    expect(await sentBy(impatientKey, "pending")).toBe(sent + 1);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payee + PRICE);

    // A seller that retries /settle itself gets the outcome of the one transaction it sent.
    const payment = JSON.parse(Buffer.from(header, "base64").toString());
    const again = await fetch(`${impatient.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        x402Version: 1,
        paymentPayload: payment,
        paymentRequirements: accepts?.[0],
      }),
    });
    const outcome = (await again.json()) as { success: boolean; transaction: Hex };
    expect({ status: again.status, ...outcome }).toMatchObject({
      status: 200,
      success: true,
      network: "base-sepolia",
      payer: payer.address,
    });
    expect(await transfersIn(outcome.transaction)).toEqual([
      [devnet.token.address.toLowerCase(), payer.address, devnet.payee.address, PRICE],
    ]);
    expect(await sentBy(impatientKey, "pending")).toBe(sent + 1);
  }, 60_000);
});
