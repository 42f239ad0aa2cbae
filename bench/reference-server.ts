/**
 * The x402 reference facilitator (@x402/core + @x402/evm 2.27, `ExactEvmScheme`) behind a minimal
 * node:http server that speaks our reference dialect, so bench/compare.ts can load both the same
 * way:
 *
 *   POST /verify {payload, requirements} → 200 {success:true, payer} | 400 {success:false, error}
 *   POST /settle {payload, requirements} → 200 {success:true, transactionHash}
 *                                        | 400/500 {success:false, error}
 *
 * Settle always waits for the receipt (the reference has no other mode). The signer is the one the
 * reference examples build (bench/official-signer.ts).
 *
 *   REFERENCE_RPC_URL=http://127.0.0.1:8545 REFERENCE_PRIVATE_KEY=0x… REFERENCE_PORT=0 \
 *     tsx bench/reference-server.ts
 *
 * Prints `listening <url>` on stdout once it accepts connections; exits 0 on SIGTERM or SIGINT.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { Hex } from "viem";
import { officialSigner } from "./official-signer.js";

const BODY_LIMIT_BYTES = 64 * 1024;
const STOP_GRACE_MS = 5_000;

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`reference-server: ${name} is required`);
    process.exit(2);
  }
  return value;
}

const rpcUrl = required("REFERENCE_RPC_URL");
const privateKey = required("REFERENCE_PRIVATE_KEY");
if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) {
  console.error("reference-server: REFERENCE_PRIVATE_KEY is not a 32-byte hex key");
  process.exit(2);
}
const port = Number(process.env.REFERENCE_PORT ?? "0");
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error("reference-server: REFERENCE_PORT must be a port number");
  process.exit(2);
}

const { signer, network } = await officialSigner(rpcUrl, privateKey as Hex);

const facilitator = new x402Facilitator();
facilitator.register(network, new ExactEvmScheme(signer, { eip6492AllowedFactories: [] }));

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Reads the body up to BODY_LIMIT_BYTES; undefined when it is larger. */
function readBody(request: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    request.once("end", () =>
      resolve(tooLarge ? undefined : Buffer.concat(chunks).toString("utf8")),
    );
    request.once("error", reject);
  });
}

function parseRequest(
  text: string,
): { payload: PaymentPayload; requirements: PaymentRequirements } | undefined {
  try {
    const body = JSON.parse(text) as { payload?: unknown; requirements?: unknown };
    if (typeof body.payload !== "object" || body.payload === null) return undefined;
    if (typeof body.requirements !== "object" || body.requirements === null) return undefined;
    return {
      payload: body.payload as PaymentPayload,
      requirements: body.requirements as PaymentRequirements,
    };
  } catch {
    return undefined;
  }
}

/** Reasons that mean "the chain or the facilitator failed", not "the payment is bad". */
const SERVER_SIDE_SETTLE_ERRORS = new Set([
  "settlement_pending",
  "invalid_exact_evm_transaction_failed",
  "invalid_exact_evm_transfer_event_mismatch",
]);

async function verify(text: string): Promise<Answer> {
  const request = parseRequest(text);
  if (!request) return { status: 400, body: { success: false, error: "invalid_request" } };
  try {
    const result = await facilitator.verify(request.payload, request.requirements);
    if (result.isValid) return { status: 200, body: { success: true, payer: result.payer } };
    return { status: 400, body: { success: false, error: result.invalidReason } };
  } catch (error) {
    return {
      status: 500,
      body: { success: false, error: "internal_error", message: message(error) },
    };
  }
}

async function settle(text: string): Promise<Answer> {
  const request = parseRequest(text);
  if (!request) return { status: 400, body: { success: false, error: "invalid_request" } };
  try {
    const result = await facilitator.settle(request.payload, request.requirements);
    if (result.success) {
      return { status: 200, body: { success: true, transactionHash: result.transaction } };
    }
    const status = SERVER_SIDE_SETTLE_ERRORS.has(result.errorReason ?? "") ? 500 : 400;
    return {
      status,
      body: {
        success: false,
        error: result.errorReason,
        ...(result.errorMessage ? { message: result.errorMessage.slice(0, 300) } : {}),
        ...(result.transaction ? { transactionHash: result.transaction } : {}),
      },
    };
  } catch (error) {
    return {
      status: 500,
      body: { success: false, error: "internal_error", message: message(error) },
    };
  }
}

async function route(request: IncomingMessage): Promise<Answer> {
  const path = (request.url ?? "/").split("?")[0];
  const handler = path === "/verify" ? verify : path === "/settle" ? settle : undefined;
  if (!handler) return { status: 404, body: { success: false, error: "not_found" } };
  if (request.method !== "POST") {
    return { status: 405, body: { success: false, error: "method_not_allowed" } };
  }
  const text = await readBody(request);
  if (text === undefined)
    return { status: 413, body: { success: false, error: "payload_too_large" } };
  return handler(text);
}

function send(response: ServerResponse, answer: Answer): void {
  const body = JSON.stringify(answer.body);
  response.writeHead(answer.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

const server = createServer((request, response) => {
  route(request).then(
    (answer) => send(response, answer),
    (error: unknown) =>
      send(response, {
        status: 500,
        body: { success: false, error: "internal_error", message: message(error) },
      }),
  );
});

let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  // Answer what is in flight, drop idle keep-alive connections, and do not wait forever.
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
}
process.once("SIGTERM", stop);
process.once("SIGINT", stop);

server.listen(port, "127.0.0.1", () => {
  const { port: bound } = server.address() as AddressInfo;
  process.stdout.write(`listening http://127.0.0.1:${bound}\n`);
});
