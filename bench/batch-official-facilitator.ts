/**
 * The official x402 facilitator as bench:batch runs it, in a process of its own (bench/batch.ts
 * with BENCH_BATCH_ROLE=official): @x402/core + @x402/evm 2.27 with its `batch-settlement` and
 * `exact` schemes, behind a minimal node:http server speaking the x402 dialect.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { officialSigner } from "./official-signer.js";

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
 * the one the SDK's examples build (bench/official-signer.ts); settles always wait for the
 * receipt (the SDK has no other mode).
 */
export async function runOfficialServer(): Promise<void> {
  const rpcUrl = required("OFFICIAL_RPC_URL");
  const relayerKey = required("OFFICIAL_RELAYER_KEY") as Hex;
  const authorizerKey = required("OFFICIAL_AUTHORIZER_KEY") as Hex;
  const { signer, network } = await officialSigner(rpcUrl, relayerKey);
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
