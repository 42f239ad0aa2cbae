/**
 * A payment signed on a devnet but naming another network: what an attacker or a confused client
 * sends to make a facilitator settle somewhere its operator never chose.
 */
import type { Devnet } from "../../src/evm/devnet/index.js";
import { signSampleRequest } from "../../src/evm/devnet/sample.js";

export type Dialect = "reference" | "x402";

/** `network` without a colon is an x402 v1 name (`base`); with one, a v2 CAIP-2 id. */
export async function requestOn(
  devnet: Devnet,
  network: string,
  dialect: Dialect = "reference",
  payerIndex = 0,
) {
  const payer = devnet.payers[payerIndex];
  if (!payer) throw new Error(`the devnet has no payer ${payerIndex}`);
  const signed = (await signSampleRequest(devnet, { payer })) as {
    payload: { payload: unknown; accepted: Record<string, unknown> };
    requirements: Record<string, unknown>;
  };
  const v1 = !network.includes(":");
  let payload: unknown;
  let requirements: Record<string, unknown>;
  if (v1) {
    const { amount, ...rest } = signed.requirements;
    requirements = {
      ...rest,
      network,
      maxAmountRequired: amount,
      resource: "http://localhost/paid",
      description: "",
      mimeType: "application/json",
    };
    payload = { x402Version: 1, scheme: "exact", network, payload: signed.payload.payload };
  } else {
    requirements = { ...signed.requirements, network };
    payload = { ...signed.payload, accepted: requirements };
  }
  return dialect === "reference"
    ? { payload, requirements }
    : { x402Version: v1 ? 1 : 2, paymentPayload: payload, paymentRequirements: requirements };
}
