/**
 * Solana verify through our Facilitator, end to end: payments made by the official @x402/svm
 * client against the local Solana devnet, verified in-process and through the HTTP handler in
 * both dialects, with the official @x402/svm facilitator's verdict beside ours on the same payload;
 * and the verify of a transaction that already landed, over a real HTTP server.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { startServer } from "../src/http/server.js";
import { RpcRegistry } from "../src/rpc/rpc.js";
import { svmFeePayerOf } from "../src/svm/chain/keys.js";
import { PAYER_USDC_BALANCE, type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { handlePost } from "./helpers/facilitator.js";
import {
  referenceSvmFacilitator,
  svmClientPayload,
  svmRequirementsV2,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let facilitator: Facilitator;
let reference: Awaited<ReturnType<typeof referenceSvmFacilitator>>;

beforeAll(async () => {
  devnet = await startSvmDevnet({ slotMs: 100 });
  const feePayer = svmFeePayerOf(devnet.feePayer.secretKey);
  if (!feePayer) throw new Error("the devnet's fee payer key does not parse");
  facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], svmFeePayers: [feePayer] });
  reference = await referenceSvmFacilitator(devnet);
});

afterAll(async () => {
  await devnet?.stop();
});

type Requirements = ReturnType<typeof svmRequirementsV2>;
// biome-ignore lint/suspicious/noExplicitAny: the official client's payload type is a union.
type Payload = any;

const post = (route: string, body: unknown) => handlePost(facilitator, route, body);

/** Ours in the x402 dialect, ours in the reference dialect, and the official verdict. */
async function verdicts(payload: Payload, requirements: Requirements) {
  const [x402, ours, official] = await Promise.all([
    post("/verify", { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
    post("/verify", { payload, requirements }),
    reference.verify(payload, requirements as never),
  ]);
  return { x402, ours, official };
}

describe("networks", () => {
  test("a Solana RPC URL is recognised by its genesis hash, beside EVM behaviour", async () => {
    const rpc = new RpcRegistry({ rpcUrls: [devnet.rpcUrl] });
    expect(await rpc.servedSolanaNetworks()).toEqual(["solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"]);
    expect(await rpc.servedChainIds()).toEqual([]);
    expect(await rpc.endpoints()).toEqual([
      { url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), solana: devnet.network },
    ]);
  });

  test("the CAIP-2 ids are those of @x402/svm", async () => {
    const { SOLANA_MAINNET_CAIP2, SOLANA_DEVNET_CAIP2, SOLANA_TESTNET_CAIP2 } = await import(
      "@x402/svm"
    );
    const { SOLANA_CLUSTERS } = await import("../src/protocol/solana-networks.js");
    expect(SOLANA_CLUSTERS.map((c) => c.network)).toEqual([
      SOLANA_MAINNET_CAIP2,
      SOLANA_DEVNET_CAIP2,
      SOLANA_TESTNET_CAIP2,
    ]);
  });

  test("/supported lists the Solana kinds with extra.feePayer and transactionVersions", async () => {
    const { status, body } = await createHandler(facilitator)({
      method: "GET",
      url: "/supported",
      headers: {},
      body: Buffer.alloc(0),
    }).then((r) => ({ status: r.status, body: JSON.parse(r.body) }));
    expect(status).toBe(200);
    const feePayer = devnet.feePayer.address;
    const extra = { feePayer, transactionVersions: [0] };
    expect(body.kinds).toEqual([
      { x402Version: 1, scheme: "exact", network: "solana-devnet", extra },
      { x402Version: 2, scheme: "exact", network: devnet.network, extra },
    ]);
    expect(body.signers).toEqual({ "solana:*": [feePayer] });
  });

  test("a Solana network no configured RPC serves is unsupported_network", async () => {
    const requirements = {
      ...svmRequirementsV2(devnet),
      network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
    };
    const { status, body } = await post("/verify", {
      payload: { x402Version: 2, accepted: requirements, payload: { transaction: "AA==" } },
      requirements,
    });
    expect(status).toBe(400);
    expect(body).toMatchObject({ success: false, error: "unsupported_network" });
    expect(body.message).toContain("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
  });
});

describe("verify", () => {
  test("a valid v2 payment is valid, with the payer, in-process and in both dialects", async () => {
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet);
    const payload = await svmClientPayload(devnet, payer, requirements);
    const { x402, ours, official } = await verdicts(payload, requirements);
    expect(official).toMatchObject({ isValid: true, payer: payer.address });
    expect(x402).toEqual({ status: 200, body: { isValid: true, payer: payer.address } });
    expect(ours).toEqual({ status: 200, body: { success: true, payer: payer.address } });
  });

  test("the same transaction as an x402 v1 payment on solana-devnet is valid", async () => {
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet);
    const payload = await svmClientPayload(devnet, payer, requirements);
    const v1Requirements = {
      scheme: "exact",
      network: "solana-devnet",
      maxAmountRequired: requirements.amount,
      resource: "http://localhost/paid",
      description: "",
      mimeType: "application/json",
      payTo: requirements.payTo,
      maxTimeoutSeconds: 300,
      asset: requirements.asset,
      extra: requirements.extra,
    };
    const v1Payload = {
      x402Version: 1,
      scheme: "exact",
      network: "solana-devnet",
      payload: payload.payload,
    };
    const { status, body } = await post("/verify", {
      x402Version: 1,
      paymentPayload: v1Payload,
      paymentRequirements: v1Requirements,
    });
    expect({ status, body }).toEqual({
      status: 200,
      body: { isValid: true, payer: payer.address },
    });
  });

  test("over the payer's balance: the simulation fails, as the official facilitator says", async () => {
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { amount: String(PAYER_USDC_BALANCE + 1n) });
    const payload = await svmClientPayload(devnet, payer, requirements);
    const { x402, ours, official } = await verdicts(payload, requirements);
    expect(official.invalidReason).toBe("invalid_exact_svm_transaction_simulation_failed");
    expect(x402.body).toMatchObject({
      isValid: false,
      invalidReason: official.invalidReason,
      payer: payer.address,
    });
    expect(ours).toMatchObject({
      status: 400,
      body: { success: false, error: "simulation_failed" },
    });
    expect(ours.body.message).toMatch(/fails in simulation/);
  });

  test.each([
    [
      "wrong amount",
      { amount: "20000" },
      "invalid_exact_svm_payload_amount_mismatch",
      "amount_mismatch",
    ],
    ["wrong payee", "payee", "invalid_exact_svm_payload_recipient_mismatch", "recipient_mismatch"],
  ] as const)("%s: the official reason", async (_name, change, reason, code) => {
    const payer = devnet.payers[0];
    if (!payer) throw new Error("no payer");
    const signed = svmRequirementsV2(devnet);
    const payload = await svmClientPayload(devnet, payer, signed);
    const requirements =
      change === "payee"
        ? svmRequirementsV2(devnet, { payTo: devnet.payers[2]?.address as string })
        : svmRequirementsV2(devnet, change);
    // The payload as the payer sent it, checked against other requirements.
    const { x402, ours, official } = await verdicts(payload, requirements);
    expect(official.invalidReason).toBe(reason);
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });
    expect(ours).toMatchObject({ status: 400, body: { success: false, error: code } });
  });

  test("a fee payer that is not ours: the official reason", async () => {
    const payer = devnet.payers[0];
    const foreign = devnet.payers[2];
    if (!payer || !foreign) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { feePayer: foreign.address });
    const payload = await svmClientPayload(devnet, payer, requirements);
    const { x402, ours, official } = await verdicts(payload, requirements);
    expect(official.invalidReason).toBe("invalid_exact_svm_fee_payer_not_managed_by_facilitator");
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: official.invalidReason });
    expect(ours).toMatchObject({
      status: 400,
      body: { success: false, error: "facilitator_mismatch" },
    });
  });
});

describe("blockhash freshness", () => {
  test("a blockhash more than 150 blocks old fails in simulation, as the official facilitator says", async () => {
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { amount: "1" });
    const payload = await svmClientPayload(devnet, payer, requirements);
    for (let i = 0; i < 160; i++) devnet.cluster.tick();
    const { x402, ours, official } = await verdicts(payload, requirements);
    expect(official.invalidReason).toBe("invalid_exact_svm_transaction_simulation_failed");
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: official.invalidReason });
    expect(ours).toMatchObject({
      status: 400,
      body: { success: false, error: "simulation_failed" },
    });
    expect(ours.body.message).toContain("BlockhashNotFound");
  });
});

describe("a transaction that already landed (issue 18)", () => {
  test("/verify answers 400 duplicate_settlement over HTTP, /settle keeps 409; the x402 dialect is unchanged", async () => {
    const payer = devnet.payers[2];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { amount: "1" });
    const payload = await svmClientPayload(devnet, payer, requirements);
    const server = await startServer(createHandler(facilitator), { port: 0 });
    const overHttp = async (route: string, body: unknown) => {
      const response = await fetch(`${server.url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const reference = { payload, requirements };
    const x402 = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
    try {
      expect(await overHttp("/settle", reference)).toMatchObject({
        status: 200,
        body: { success: true },
      });
      // A payment refused at verify is a 400, as its EVM twin nonce_already_used; the code stays.
      const verified = await overHttp("/verify", reference);
      expect(verified).toMatchObject({
        status: 400,
        body: { success: false, error: "duplicate_settlement" },
      });
      expect(verified.body.message).toContain("AlreadyProcessed");
      expect(await overHttp("/settle", reference)).toMatchObject({
        status: 409,
        body: { success: false, error: "duplicate_settlement" },
      });
      expect(await overHttp("/verify", x402)).toEqual({
        status: 200,
        body: {
          isValid: false,
          invalidReason: "invalid_exact_svm_transaction_simulation_failed",
          invalidMessage: verified.body.message,
          payer: payer.address,
        },
      });
      expect(await overHttp("/settle", x402)).toMatchObject({
        status: 200,
        body: { success: false, errorReason: "duplicate_settlement" },
      });
    } finally {
      await server.close();
    }
  });
});
