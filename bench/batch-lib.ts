/**
 * What bench/batch.ts needs besides its measurements: the two facilitators as HTTP servers on one
 * devnet (our `facilitator serve`, and the official x402 facilitator, @x402/core + @x402/evm 2.27
 * with its `batch-settlement` and `exact` schemes, behind a minimal node:http server speaking the
 * x402 dialect), a JSON-RPC proxy in front of anvil per server that counts the calls each makes,
 * payloads made by the official client, and the load loop.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toClientEvmSigner, toFacilitatorEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  nonceManager,
  type PublicClient,
  publicActions,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { cleanEnv, exited, freePort, post } from "./lib.js";
import { ROOT } from "./settle-lib.js";

/** What one paid request costs on the batch-settlement route: 0.001 test USDC. */
export const PRICE = 1_000n;
export const WITHDRAW_DELAY = 900;
const READY_TIMEOUT_MS = 30_000;
export const REQUEST_TIMEOUT_MS = 60_000;

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
export type Json = any;

// ---------------------------------------------------------------------------------------------
// Child processes: tracked, and killed if this process exits without stopping them.

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) if (!exited(child)) child.kill("SIGKILL");
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Keeps the last few kB of a stream, for error messages. */
function tail(stream: NodeJS.ReadableStream | null | undefined): () => string {
  let text = "";
  stream?.setEncoding("utf8");
  stream?.on("data", (chunk: string) => {
    text = (text + chunk).slice(-4_000);
  });
  return () => text;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// A counting JSON-RPC proxy: every server talks to anvil through its own, so the bench can say
// how many calls a request cost.

export interface RpcCounter {
  readonly url: string;
  /** JSON-RPC calls forwarded so far (a batch counts each call in it), by method. */
  counts(): Record<string, number>;
  total(): number;
  close(): Promise<void>;
}

export function rpcProxy(upstream: string): Promise<RpcCounter> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });
  const counts: Record<string, number> = {};
  let total = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      const body = Buffer.concat(chunks);
      for (const match of body.toString("utf8").matchAll(/"method"\s*:\s*"([^"]+)"/g)) {
        const method = match[1] as string;
        counts[method] = (counts[method] ?? 0) + 1;
        total += 1;
      }
      const forward = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": body.length },
          agent,
        },
        (upstreamResponse) => {
          response.writeHead(upstreamResponse.statusCode ?? 502, {
            "content-type": upstreamResponse.headers["content-type"] ?? "application/json",
          });
          upstreamResponse.pipe(response);
        },
      );
      forward.once("error", (error) => {
        if (!response.headersSent) response.writeHead(502);
        response.end(String(error));
      });
      forward.end(body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        counts: () => ({ ...counts }),
        total: () => total,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
            agent.destroy();
          }),
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The two servers.

export interface Target {
  readonly name: "ours" | "official";
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly rpc: RpcCounter;
  readonly log: () => string;
}

/**
 * `facilitator serve` (the built dist) on a free port, its RPC through `rpc`, settling from the
 * key in `keyFile`, the receiver authorizer's key in its environment (never on the command line,
 * never printed), its journal and state under `dir`. Ready once /supported lists
 * batch-settlement with that authorizer.
 */
export async function startOurs(options: {
  readonly rpc: RpcCounter;
  readonly keyFile: string;
  readonly authorizer: DevAccount;
  readonly dir: string;
}): Promise<Target> {
  const port = await freePort();
  const child = track(
    spawn(
      process.execPath,
      [
        path.join(ROOT, "bin/facilitator.js"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--rpc-url",
        options.rpc.url,
        "--private-key-file",
        options.keyFile,
        "--journal",
        path.join(options.dir, "journal.jsonl"),
        "--confirm-timeout",
        "60",
        "--quiet",
      ],
      {
        cwd: ROOT,
        env: {
          ...cleanEnv(),
          // Nothing of the bench goes to the user's state directory.
          XDG_STATE_HOME: options.dir,
          FORCE_COLOR: "0",
          FACILITATOR_RECEIVER_AUTHORIZER_KEY: options.authorizer.privateKey,
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    ),
  );
  const log = tail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = "";
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`facilitator serve exited early:\n${log()}`);
    try {
      const response = await fetch(`${url}/supported`, { signal: AbortSignal.timeout(2_000) });
      const supported = (await response.json()) as {
        kinds?: { scheme?: string; extra?: { receiverAuthorizer?: string } }[];
      };
      const kind = supported.kinds?.find((k) => k.scheme === "batch-settlement");
      const advertised = kind?.extra?.receiverAuthorizer?.toLowerCase();
      if (advertised === options.authorizer.address.toLowerCase() && child.pid !== undefined) {
        return { name: "ours", child, pid: child.pid, url, rpc: options.rpc, log };
      }
      last = `/supported lists batch-settlement with receiverAuthorizer ${advertised}`;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(
    `facilitator serve was not ready within ${READY_TIMEOUT_MS} ms (${last}):\n${log()}`,
  );
}

/**
 * The official facilitator in its own process (this file's `runOfficialServer`, started through
 * bench/batch.ts with BENCH_BATCH_ROLE=official), its RPC through `rpc`.
 */
export function startOfficial(options: {
  readonly script: string;
  readonly rpc: RpcCounter;
  readonly relayer: DevAccount;
  readonly authorizer: DevAccount;
}): Promise<Target> {
  const child = track(
    spawn(process.execPath, ["--import", "tsx", options.script], {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        BENCH_BATCH_ROLE: "official",
        OFFICIAL_RPC_URL: options.rpc.url,
        OFFICIAL_RELAYER_KEY: options.relayer.privateKey,
        OFFICIAL_AUTHORIZER_KEY: options.authorizer.privateKey,
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const log = tail(child.stderr);
  return new Promise((resolve, reject) => {
    let stdout = "";
    const timer = setTimeout(() => {
      reject(new Error(`official server did not listen within ${READY_TIMEOUT_MS} ms:\n${log()}`));
    }, READY_TIMEOUT_MS);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (stdout.length < 4_000) stdout += chunk;
      const match = /listening (http:\/\/\S+)/.exec(stdout);
      if (match?.[1] && child.pid !== undefined) {
        clearTimeout(timer);
        resolve({
          name: "official",
          child,
          pid: child.pid,
          url: match[1],
          rpc: options.rpc,
          log,
        });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`official server exited (${code ?? signal}):\n${log()}`));
    });
  });
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`official server: ${name} is required`);
  return value;
}

/**
 * The official facilitator (x402 2.27: `x402Facilitator` with `BatchSettlementEvmScheme`, holding
 * the receiver-authorizer key, and `ExactEvmScheme`) behind node:http, as the x402 HTTP
 * facilitator protocol has it: POST /verify and /settle take {paymentPayload, paymentRequirements}
 * and answer the facilitator's VerifyResponse / SettleResponse (500 if it threw). Its signer is
 * the one the SDK's examples build, with viem's nonce manager so concurrent settles from one key
 * take consecutive nonces; settles always wait for the receipt (the SDK has no other mode).
 */
export async function runOfficialServer(): Promise<void> {
  const rpcUrl = required("OFFICIAL_RPC_URL");
  const relayerKey = required("OFFICIAL_RELAYER_KEY") as Hex;
  const authorizerKey = required("OFFICIAL_AUTHORIZER_KEY") as Hex;
  const chainIdAnswer = (await (
    await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    })
  ).json()) as { result?: string };
  if (typeof chainIdAnswer.result !== "string") throw new Error("eth_chainId gave no result");
  const chainId = Number(BigInt(chainIdAnswer.result));
  const network = `eip155:${chainId}` as const;
  const chain = defineChain({
    id: chainId,
    name: `devnet ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    // As bench/reference-server.ts: the devnet's heartbeat block every second.
    blockTime: 1_000,
  });
  const account = privateKeyToAccount(relayerKey, { nonceManager });
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) }).extend(
    publicActions,
  );
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    // biome-ignore lint/suspicious/noExplicitAny: forwarding viem calls as the SDK's examples do.
    readContract: (args: any) => wallet.readContract({ ...args, args: args.args ?? [] }),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    verifyTypedData: (args: any) => wallet.verifyTypedData(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    writeContract: (args: any) => wallet.writeContract({ ...args, args: args.args ?? [] }),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    sendTransaction: (args: any) => wallet.sendTransaction(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    waitForTransactionReceipt: (args: any) => wallet.waitForTransactionReceipt(args),
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    getCode: (args: any) => wallet.getCode(args),
  });
  const facilitator = new x402Facilitator();
  facilitator.register(network, new BatchFacilitator(signer, privateKeyToAccount(authorizerKey)));
  facilitator.register(network, new ExactEvmScheme(signer, { eip6492AllowedFactories: [] }));

  const answer = async (op: string, text: string): Promise<{ status: number; body: unknown }> => {
    let parsed: { paymentPayload?: PaymentPayload; paymentRequirements?: PaymentRequirements };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      return { status: 400, body: { error: "invalid_json" } };
    }
    if (!parsed.paymentPayload || !parsed.paymentRequirements) {
      return { status: 400, body: { error: "invalid_request" } };
    }
    try {
      const result =
        op === "/verify"
          ? await facilitator.verify(parsed.paymentPayload, parsed.paymentRequirements)
          : await facilitator.settle(parsed.paymentPayload, parsed.paymentRequirements);
      return { status: 200, body: result };
    } catch (error) {
      return {
        status: 500,
        body: { error: "threw", message: error instanceof Error ? error.message : String(error) },
      };
    }
  };
  const reply = (response: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body, (_key, value) =>
      typeof value === "bigint" ? value.toString() : value,
    );
    response.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    response.end(text);
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const route = (request.url ?? "/").split("?")[0] ?? "/";
    if (request.method !== "POST" || (route !== "/verify" && route !== "/settle")) {
      request.resume();
      reply(response, 404, { error: "not_found" });
      return;
    }
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      answer(route, Buffer.concat(chunks).toString("utf8")).then(
        ({ status, body }) => reply(response, status, body),
        (error: unknown) => reply(response, 500, { error: String(error) }),
      );
    });
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 3_000).unref();
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`listening http://127.0.0.1:${port}\n`);
  });
}

// ---------------------------------------------------------------------------------------------
// Requests: one way for both servers (x402 dialect).

export interface Outcome {
  readonly ok: boolean;
  readonly ms: number;
  readonly hash?: Hex | undefined;
  readonly body?: Json;
  readonly error?: string | undefined;
}

/** POST /verify: ok when 200 and isValid. */
export async function verifyAt(target: Target, body: string): Promise<Outcome> {
  const answer = await post(`${target.url}/verify`, body, REQUEST_TIMEOUT_MS);
  const parsed = answer.body as Json;
  if (answer.status === 200 && parsed?.isValid === true) {
    return { ok: true, ms: answer.ms, body: parsed };
  }
  return { ok: false, ms: answer.ms, body: parsed, error: describe(answer) };
}

/** POST /settle: ok when 200, success and a transaction hash. */
export async function settleAt(target: Target, body: string): Promise<Outcome> {
  const answer = await post(`${target.url}/settle`, body, REQUEST_TIMEOUT_MS);
  const parsed = answer.body as Json;
  const hash = parsed?.transaction;
  if (answer.status === 200 && parsed?.success === true && typeof hash === "string" && hash) {
    return { ok: true, ms: answer.ms, hash: hash as Hex, body: parsed };
  }
  return { ok: false, ms: answer.ms, body: parsed, error: describe(answer) };
}

function describe(answer: { status: number; error?: string; text?: string }): string {
  if (answer.status === 0) return answer.error ?? "no answer";
  return `${answer.status} ${(answer.text ?? "").trim().slice(0, 300)}`;
}

/** The x402-dialect body: the payment, the requirements, and (ignored by verify) waitUntil. */
export const x402Body = (payment: Json, requirements: Json) =>
  JSON.stringify({
    x402Version: 2,
    paymentPayload: payment,
    paymentRequirements: requirements,
    waitUntil: "confirmed",
  });

// ---------------------------------------------------------------------------------------------
// batch-settlement payloads, as the official client and a seller's channel manager make them.

export function batchRequirements(chain: Devnet, receiverAuthorizer: Address): Json {
  return {
    scheme: "batch-settlement",
    network: chain.network,
    amount: PRICE.toString(),
    asset: chain.token.address,
    payTo: chain.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer,
      withdrawDelay: WITHDRAW_DELAY,
      name: chain.token.name,
      version: chain.token.version,
    },
  };
}

let readClient: PublicClient | undefined;
export function reader(chain: Devnet): PublicClient {
  readClient ??= createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
  return readClient;
}

/** One payer's channel to the payee, as the official client opens and pays it. */
export interface Channel {
  readonly payer: DevAccount;
  readonly id: Hex;
  readonly config: Json;
  /** The latest voucher signed, and its cumulative amount. */
  latest: { readonly amount: bigint; readonly signature: Hex };
  sign(amount: bigint): Promise<Json>;
}

/**
 * The official client's first payment on an empty channel: a deposit of `deposit` (its
 * depositStrategy) carrying the first voucher (PRICE). A fresh client, reading the chain.
 */
export async function openPayment(
  chain: Devnet,
  payer: DevAccount,
  accepted: Json,
  deposit: bigint,
): Promise<{ payment: Json; channel: Channel }> {
  const signer = toClientEvmSigner(privateKeyToAccount(payer.privateKey), reader(chain) as never);
  const scheme = new BatchClient(signer, { depositStrategy: () => deposit });
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(chain.network, scheme);
  const payment = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
  } as never)) as Json;
  if (payment.payload?.type !== "deposit") {
    throw new Error(`the official client made a ${payment.payload?.type}, not a deposit`);
  }
  const config = scheme.buildChannelConfig(accepted);
  const id = computeChannelId(config, chain.network) as Hex;
  const channel: Channel = {
    payer,
    id,
    config,
    latest: {
      amount: BigInt(payment.payload.voucher.maxClaimableAmount),
      signature: payment.payload.voucher.signature,
    },
    async sign(amount: bigint) {
      const voucher = await signVoucher(signer, id, amount.toString(), chain.network);
      channel.latest = { amount, signature: voucher.signature as Hex };
      return {
        x402Version: 2,
        resource: { url: "http://localhost/metered" },
        accepted,
        payload: { type: "voucher", channelConfig: config, voucher },
      };
    },
  };
  return { payment, channel };
}

/** A claim or settle as a seller's channel manager sends it. */
export function actionPayment(accepted: Json, payload: Record<string, unknown>): Json {
  return {
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepted: { ...accepted, amount: "0", extra: {} },
    payload,
  };
}

/** The claim row of a channel's latest voucher, claiming all of it. */
export const claimRow = (channel: Channel) => ({
  voucher: { channel: channel.config, maxClaimableAmount: channel.latest.amount.toString() },
  signature: channel.latest.signature,
  totalClaimed: channel.latest.amount.toString(),
});

// ---------------------------------------------------------------------------------------------
// Load and measurement.

/** CPU time (user + system, all threads) a live process has used so far, in ms. */
export function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Nearest-rank percentile. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface Level {
  readonly count: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
  readonly notSent: number;
  /** The server's CPU ms and RPC calls per answered request. */
  readonly cpuPerRequest?: number | undefined;
  readonly rpcPerRequest: number;
  readonly rpcMethods: Record<string, number>;
}

/**
 * Runs `queues.length` workers at once, worker w doing queues[w] in order, until all are done or
 * `seconds` pass; each job is one paid request (it may be several HTTP calls) and says whether it
 * succeeded. Measures the target's CPU and RPC calls over the run.
 */
export async function runLevel(
  target: Target,
  queues: readonly (readonly (() => Promise<Outcome>)[])[],
  seconds: number,
): Promise<Level> {
  const latenciesMs: number[] = [];
  const errors: string[] = [];
  let notSent = 0;
  const cpuBefore = cpuMs(target.pid);
  const rpcBefore = target.rpc.counts();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    queues.map(async (queue) => {
      for (const [i, job] of queue.entries()) {
        if (performance.now() >= deadline) {
          notSent += queue.length - i;
          return;
        }
        const outcome = await job();
        if (outcome.ok) latenciesMs.push(outcome.ms);
        else errors.push(outcome.error ?? "failed");
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = cpuMs(target.pid);
  const rpcAfter = target.rpc.counts();
  const rpcMethods: Record<string, number> = {};
  let rpcCalls = 0;
  for (const [method, n] of Object.entries(rpcAfter)) {
    const delta = n - (rpcBefore[method] ?? 0);
    if (delta > 0) rpcMethods[method] = delta;
    rpcCalls += delta;
  }
  const count = latenciesMs.length + errors.length;
  return {
    count,
    seconds: elapsed,
    latenciesMs,
    errors,
    notSent,
    cpuPerRequest:
      cpuBefore === undefined || cpuAfter === undefined || count === 0
        ? undefined
        : (cpuAfter - cpuBefore) / count,
    rpcPerRequest: count === 0 ? 0 : rpcCalls / count,
    rpcMethods,
  };
}

/** Runs `jobs` `concurrency` at a time (no timing); the outcomes in order. */
export async function inParallel<T>(
  items: readonly T[],
  concurrency: number,
  job: (item: T, index: number) => Promise<Outcome>,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next;
        next += 1;
        outcomes[index] = await job(items[index] as T, index);
      }
    }),
  );
  return outcomes;
}

/** A markdown table, columns after the first right-aligned. */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, i) =>
    Math.max(h.length, 3, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}
