/**
 * Adding a scheme is one folder and one registration line: test/schemes/tip/ is a scheme written
 * for this test, registered the way src/evm/schemes.ts registers exact and upto. Through the real
 * HTTP handler on a devnet it is listed on /supported, routed to by verify and settle, and its
 * offers are completed by /accepts; nothing else of the facilitator was edited for it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { EVM_SCHEMES } from "../src/evm/schemes.js";
import { createHandler } from "../src/http/handler.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { facilitatorOn, handlePost } from "./helpers/facilitator.js";
import { randomNonce, signAuthorization, wireAuthorization } from "./helpers/sign.js";
import { requirementsV2 } from "./helpers/x402.js";
import { TIP, tipScheme } from "./schemes/tip/index.js";

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet();
});
afterAll(async () => {
  await devnet?.stop();
});

const withTip = () => facilitatorOn(devnet, { schemes: [...EVM_SCHEMES, tipScheme] });

async function tipRequest(amount: bigint) {
  const payer = await payerHolding(devnet, amount);
  const fields = {
    from: payer.address,
    to: devnet.payee.address,
    value: amount,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 300),
    nonce: randomNonce(),
  };
  const signature = await signAuthorization(devnet, payer.privateKey, fields);
  const requirements = { ...requirementsV2(devnet, { amount: amount.toString() }), scheme: TIP };
  const paymentPayload = {
    x402Version: 2,
    resource: { url: "http://localhost/tip" },
    accepted: requirements,
    payload: { authorization: wireAuthorization(fields), signature },
  };
  return { paymentPayload, paymentRequirements: requirements };
}

describe("a scheme registered beside exact and upto", () => {
  test("is listed on /supported, with its kind's extra", async () => {
    const answer = await createHandler(withTip())({
      method: "GET",
      url: "/supported",
      headers: {},
      body: Buffer.alloc(0),
    });
    const { kinds } = JSON.parse(answer.body) as { kinds: Record<string, unknown>[] };
    expect(kinds).toContainEqual({
      x402Version: 2,
      scheme: TIP,
      network: devnet.network,
      extra: { note: "a tip, once" },
    });
    expect(kinds.some((k) => k.scheme === "exact")).toBe(true);
    // Without the registration line, the scheme is unknown.
    expect((await facilitatorOn(devnet).supported()).kinds.some((k) => k.scheme === TIP)).toBe(
      false,
    );
  });

  test("verify and settle route to it: the tip lands once", async () => {
    const facilitator = withTip();
    const body = await tipRequest(2_500n);
    const before = await tokenBalance(devnet, devnet.payee.address);
    expect((await handlePost(facilitator, "/verify", body)).body).toMatchObject({
      isValid: true,
    });
    const settled = await handlePost(facilitator, "/settle", body);
    expect(settled.body).toMatchObject({ success: true });
    const receipt = await chainOf(devnet).getTransactionReceipt({
      hash: settled.body.transaction as `0x${string}`,
    });
    expect(receipt.status).toBe("success");
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 2_500n);
    // Unregistered, the same request is refused as an unknown scheme, naming the ones served.
    const refused = await handlePost(facilitatorOn(devnet), "/verify", body);
    expect(refused.body).toMatchObject({ isValid: false, invalidReason: "unsupported_scheme" });
  });

  test("/accepts completes its offers with the token's EIP-712 domain", async () => {
    const offer = {
      scheme: TIP,
      network: devnet.network,
      asset: devnet.token.address,
      payTo: devnet.payee.address,
      amount: "100",
    };
    const answer = await handlePost(withTip(), "/accepts", {
      x402Version: 2,
      resource: { url: "http://localhost/tip" },
      accepts: [offer],
    });
    expect(answer.body.accepts).toEqual([
      {
        ...offer,
        maxTimeoutSeconds: 300,
        extra: { name: devnet.token.name, version: devnet.token.version },
      },
    ]);
  });
});
