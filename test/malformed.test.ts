/**
 * Malformed and unsupported input: every case gets a code and a message that names the field,
 * never an exception, in both dialects.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator } from "../src/facilitator.js";
import type { ErrorCode } from "../src/protocol/errors.js";
import { parseJson } from "../src/protocol/request.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";

let devnet: Devnet;
let facilitator: Facilitator;
// biome-ignore lint/suspicious/noExplicitAny: requests are edited as plain JSON below.
let valid: any;

beforeAll(async () => {
  devnet = await startDevnet();
  facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
  const payer = devnet.payers[0];
  if (!payer) throw new Error("no payer");
  valid = await signSampleRequest(devnet, { payer });
});

afterAll(async () => {
  await devnet?.stop();
});

/** ERC-6492's magic suffix: what a wrapped signature ends with. */
const MAGIC_6492 = "64926492".repeat(8);

// biome-ignore lint/suspicious/noExplicitAny: see above.
type Edit = (request: any) => unknown;
const edit = (change: Edit) => () => {
  const copy = structuredClone(valid);
  const result = change(copy);
  return result === undefined ? copy : result;
};
/** The valid request with the field at `path` set (or removed) and nothing else changed. */
function locate(request: unknown, path: string) {
  const keys = path.split(".");
  const last = keys.pop() as string;
  // biome-ignore lint/suspicious/noExplicitAny: walking plain JSON.
  const parent = keys.reduce((node: any, key) => node[key], request);
  return { parent, last };
}
const set = (path: string, value: unknown) =>
  edit((r) => {
    const { parent, last } = locate(r, path);
    parent[last] = value;
  });
const remove = (path: string) =>
  edit((r) => {
    const { parent, last } = locate(r, path);
    delete parent[last];
  });

const cases: [string, () => unknown, ErrorCode, RegExp][] = [
  ["a JSON array", () => [], "invalid_request", /JSON object/],
  ["a JSON string", () => "hello", "invalid_request", /JSON object/],
  ["null", () => null, "invalid_request", /JSON object/],
  [
    "no payload",
    edit((r) => ({ requirements: r.requirements })),
    "invalid_request",
    /^payload must be an object; it is missing/,
  ],
  [
    "no requirements",
    edit((r) => ({ payload: r.payload })),
    "invalid_request",
    /^requirements must be/,
  ],
  [
    "payload is a string",
    edit((r) => ({ ...r, payload: "x" })),
    "invalid_request",
    /payload must be an object; got a string/,
  ],
  ["x402Version missing", remove("payload.x402Version"), "invalid_request", /payload\.x402Version/],
  [
    "x402Version a string",
    set("payload.x402Version", "2"),
    "invalid_request",
    /payload\.x402Version/,
  ],
  ["x402Version 3", set("payload.x402Version", 3), "unsupported_version", /version 3/],
  [
    "amount is a number",
    set("requirements.amount", 10000),
    "invalid_request",
    /^requirements\.amount: must be a string, not number$/,
  ],
  [
    "no payTo",
    remove("requirements.payTo"),
    "invalid_request",
    /^requirements\.payTo is missing \(a string is expected\)$/,
  ],
  ["no accepted", remove("payload.accepted"), "invalid_request", /payload\.accepted/],
  [
    "payTo not hex",
    set("requirements.payTo", `0x${"zz".repeat(20)}`),
    "invalid_request",
    /requirements\.payTo: expected a 0x-prefixed 20-byte hex address/,
  ],
  ["short asset", set("requirements.asset", "0x1234"), "invalid_request", /requirements\.asset/],
  [
    "bad checksum",
    // The devnet payee with the case of two letters swapped: the EIP-55 checksum no longer holds.
    set("requirements.payTo", "0xA0ee7A142d267C1f36714E4a8F75612F20a79720"),
    "invalid_request",
    /requirements\.payTo: address has an invalid EIP-55 checksum/,
  ],
  [
    "amount beyond uint256",
    set("requirements.amount", (2n ** 256n).toString()),
    "invalid_request",
    /requirements\.amount: does not fit in uint256/,
  ],
  [
    "negative amount",
    set("requirements.amount", "-1"),
    "invalid_request",
    /requirements\.amount: expected a non-negative whole number/,
  ],
  [
    "fractional amount",
    set("requirements.amount", "1.5"),
    "invalid_request",
    /requirements\.amount/,
  ],
  ["hex amount", set("requirements.amount", "0x10"), "invalid_request", /requirements\.amount/],
  [
    "value beyond uint256",
    set("payload.payload.authorization.value", "9".repeat(79)),
    "invalid_request",
    /payload\.payload\.authorization\.value/,
  ],
  [
    "negative value",
    set("payload.payload.authorization.value", "-10000"),
    "invalid_request",
    /authorization\.value/,
  ],
  [
    "value as a number",
    set("payload.payload.authorization.value", 10000),
    "invalid_request",
    /authorization\.value/,
  ],
  [
    "from too short",
    set("payload.payload.authorization.from", "0xabc"),
    "invalid_request",
    /authorization\.from/,
  ],
  [
    "nonce of 31 bytes",
    set("payload.payload.authorization.nonce", `0x${"ab".repeat(31)}`),
    "invalid_request",
    /authorization\.nonce: expected 0x and 32 bytes/,
  ],
  [
    "validBefore fractional",
    set("payload.payload.authorization.validBefore", "1.5"),
    "invalid_request",
    /authorization\.validBefore/,
  ],
  [
    "signature not hex",
    set("payload.payload.signature", "0xnothex"),
    "invalid_request",
    /payload\.payload\.signature/,
  ],
  [
    "a signature of odd length",
    set("payload.payload.signature", "0x123"),
    "invalid_request",
    /payload\.payload\.signature: expected 0x-prefixed hex bytes/,
  ],
  [
    "an empty signature",
    set("payload.payload.signature", "0x"),
    "invalid_request",
    /payload\.payload\.signature: expected 0x-prefixed hex bytes/,
  ],
  [
    "an ERC-6492 wrapper of zero bytes",
    set("payload.payload.signature", `0x${"00".repeat(32)}${MAGIC_6492}`),
    "invalid_request",
    /payload\.payload\.signature: ends with the ERC-6492 magic suffix but is no ERC-6492 wrapper/,
  ],
  [
    "an ERC-6492 wrapper that is only the suffix",
    set("payload.payload.signature", `0x${MAGIC_6492}`),
    "invalid_request",
    /payload\.payload\.signature: ends with the ERC-6492 magic suffix/,
  ],
  [
    "an ERC-6492 wrapper whose calldata runs past its end",
    set(
      "payload.payload.signature",
      `0x${"00".repeat(12)}${"11".repeat(20)}${"00".repeat(31)}60${"00".repeat(31)}80${"00".repeat(31)}ff${MAGIC_6492}`,
    ),
    "invalid_request",
    /payload\.payload\.signature: ends with the ERC-6492 magic suffix/,
  ],
  [
    "no signature",
    remove("payload.payload.signature"),
    "invalid_request",
    /payload\.payload\.signature/,
  ],
  [
    "no authorization",
    set("payload.payload", { signature: "0x00" }),
    "invalid_request",
    /must carry an EIP-3009 "authorization"/,
  ],
  [
    "extra.name a number",
    set("requirements.extra.name", 5),
    "invalid_request",
    /requirements\.extra\.name: expected a string/,
  ],
  [
    "waitUntil unknown",
    set("waitUntil", "finalized"),
    "invalid_request",
    /waitUntil must be one of simulated, submitted, confirmed/,
  ],
  ["scheme deferred", set("requirements.scheme", "deferred"), "unsupported_scheme", /"deferred"/],
  [
    "a Solana network",
    set("requirements.network", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
    "unsupported_network",
    // Solana is verified now, through a configured Solana RPC: none serves mainnet-beta here.
    /is not served here.*add a Solana RPC/,
  ],
  [
    "a v1 name in v2",
    set("requirements.network", "base-sepolia"),
    "unsupported_network",
    /eip155:84532/,
  ],
  [
    "a chain with no RPC",
    set("requirements.network", "eip155:999999"),
    "unsupported_network",
    /eip155:999999 is not served here: the configured RPC serves eip155:31337; add an RPC/,
  ],
  [
    "a Permit2 payload",
    set("payload.payload", { signature: "0x00", permit2Authorization: {} }),
    "invalid_request",
    /payload\.payload\.permit2Authorization\.from/,
  ],
  [
    "a v1 payload with a CAIP-2 network",
    edit((r) => ({
      payload: {
        x402Version: 1,
        scheme: "exact",
        network: "eip155:31337",
        payload: r.payload.payload,
      },
      requirements: { ...r.requirements, network: "eip155:31337", maxAmountRequired: "10000" },
    })),
    "unsupported_network",
    /v1 uses names such as base-sepolia/,
  ],
  // Free-form fields are bounded (issue 9): a payment needs a few values there, not thousands.
  [
    "30,000 values in requirements.extra",
    // A new requirements object: in the sample, payload.accepted is the same object.
    edit((r) => {
      const extra = { ...r.requirements.extra, padding: new Array(30_000).fill(0) };
      r.requirements = { ...r.requirements, extra };
    }),
    "invalid_request",
    /^requirements\.extra holds more than 512 JSON values/,
  ],
  [
    "a deeply nested payload.resource",
    set("payload.resource", JSON.parse(`${"[".repeat(40)}${"]".repeat(40)}`)),
    "invalid_request",
    /^payload\.resource is nested more than 32 levels deep/,
  ],
  [
    "100,000 levels of nesting in payload.extensions",
    set("payload.extensions", { x: JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`) }),
    "invalid_request",
    /^payload\.extensions is nested more than 32 levels/,
  ],
  [
    "an unknown top-level field with 1,000 values",
    edit((r) => ({ ...r, junk: new Array(1_000).fill("x") })),
    "invalid_request",
    /^junk holds more than 512 JSON values/,
  ],
  [
    "many fields of a few values each",
    edit((r) => {
      r.requirements = { ...r.requirements };
      for (let i = 0; i < 10; i++) r.requirements[`f${i}`] = new Array(300).fill(i);
    }),
    "invalid_request",
    /^the body holds more than 2048 JSON values \(the limit\); passed in requirements\.f6/,
  ],
];

describe("reference dialect", () => {
  test.each(cases)("%s → %s", async (_name, build, code, message) => {
    for (const handle of [handleVerify, handleSettle]) {
      const reply = await handle(facilitator, build());
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ success: false, error: code });
      expect(reply.body.message).toMatch(message);
    }
  });
});

describe("x402 dialect", () => {
  test("malformed fields are isValid:false with an x402 reason and the field named", async () => {
    const request = structuredClone(valid);
    request.requirements.amount = "-1";
    const reply = await handleVerify(facilitator, {
      x402Version: 2,
      paymentPayload: request.payload,
      paymentRequirements: request.requirements,
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payment_requirements",
      payer: request.payload.payload.authorization.from,
    });
    expect(reply.body.invalidMessage).toMatch(/^paymentRequirements\.amount/);
  });

  test("a malformed signature (an ERC-6492 wrapper that does not decode, odd, empty) is invalid_payload, on verify and settle", async () => {
    for (const signature of [`0x${"00".repeat(32)}${MAGIC_6492}`, "0x123", "0x", "0xnothex"]) {
      const request = structuredClone(valid);
      request.payload.payload.signature = signature;
      const body = {
        x402Version: 2,
        paymentPayload: request.payload,
        paymentRequirements: request.requirements,
      };
      const verify = await handleVerify(facilitator, body);
      expect(verify.status).toBe(200);
      expect(verify.body).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
      expect(verify.body.invalidMessage).toMatch(/^paymentPayload\.payload\.signature/);
      const settle = await handleSettle(facilitator, body);
      expect(settle.status).toBe(200);
      expect(settle.body).toMatchObject({ success: false, errorReason: "invalid_payload" });
    }
  });

  test('settle answers carry transaction "" and the network when nothing was sent', async () => {
    const request = structuredClone(valid);
    request.payload.payload.authorization.nonce = "0x12";
    const reply = await handleSettle(facilitator, {
      x402Version: 2,
      paymentPayload: request.payload,
      paymentRequirements: request.requirements,
    });
    expect(reply.body).toMatchObject({
      success: false,
      errorReason: "invalid_payload",
      transaction: "",
      network: devnet.network,
    });
  });
});

describe("free-form field bounds", () => {
  test("the x402 dialect names the field and tells payload from requirements problems", async () => {
    const request = structuredClone(valid);
    request.requirements = {
      ...request.requirements,
      extra: { ...request.requirements.extra, padding: new Array(1_000).fill(0) },
    };
    const asRequirements = await handleVerify(facilitator, {
      x402Version: 2,
      paymentPayload: request.payload,
      paymentRequirements: request.requirements,
    });
    expect(asRequirements.body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payment_requirements",
    });
    expect(asRequirements.body.invalidMessage).toMatch(/^paymentRequirements\.extra holds more/);
    const bloatedPayload = structuredClone(valid);
    bloatedPayload.payload.extensions = { big: new Array(1_000).fill({}) };
    const asPayload = await handleVerify(facilitator, {
      x402Version: 2,
      paymentPayload: bloatedPayload.payload,
      paymentRequirements: bloatedPayload.requirements,
    });
    expect(asPayload.body).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
    expect(asPayload.body.invalidMessage).toMatch(/^paymentPayload\.extensions holds more/);
  });

  test("fields of the sizes real payments use pass", async () => {
    const request = structuredClone(valid);
    // A generous v1-style outputSchema and a few extensions: well inside the limits.
    request.requirements.extra.outputSchema = {
      input: { type: "http", method: "GET" },
      output: Object.fromEntries(
        Array.from({ length: 60 }, (_, i) => [`f${i}`, { type: "string", description: "x" }]),
      ),
    };
    request.payload.extensions = { bazaar: { info: { a: [1, 2, 3] }, schema: { type: "object" } } };
    const reply = await handleVerify(facilitator, request);
    expect(reply.body).toMatchObject({ success: true });
  });
});

test("a body that is not JSON is invalid_request with the parser's reason", () => {
  const parsed = parseJson("{ not json");
  expect(parsed.ok).toBe(false);
  if (!parsed.ok) {
    expect(parsed.failure.code).toBe("invalid_request");
    expect(parsed.failure.message).toMatch(/^body is not valid JSON/);
  }
});

test("a key file passed by mistake is not echoed back in the error", () => {
  const key = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  for (const text of [key, `0x${key}`, `{"a": ${key}}`]) {
    const parsed = parseJson(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.failure.message).not.toMatch(/e3b0|c442/);
  }
});
