/**
 * One table of cases through the three doors: the core (handleVerify), the HTTP handler and the
 * CLI process. Each must give the same verdict, code and body.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import type { ErrorCode } from "../src/protocol/errors.js";
import { handleVerify } from "../src/protocol/respond.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let facilitator: Facilitator;

beforeAll(async () => {
  devnet = await startDevnet();
  facilitator = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
});

afterAll(async () => {
  await devnet?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

async function request(edit: (r: { payload: Json; requirements: Json }) => void = () => undefined) {
  const payer = devnet.payers[0];
  if (!payer) throw new Error("no payer");
  const requirements = requirementsV2(devnet);
  const body = { payload: await clientPayload(payer, requirements), requirements };
  edit(body);
  return JSON.stringify(body);
}

const cases: [string, () => Promise<string>, ErrorCode | null][] = [
  ["valid", () => request(), null],
  [
    "amount",
    () => request((r) => void Object.assign(r.requirements, { amount: "1" })),
    "amount_mismatch",
  ],
  [
    "recipient",
    () => request((r) => void Object.assign(r.requirements, { payTo: devnet.facilitator.address })),
    "recipient_mismatch",
  ],
  [
    "domain",
    () => request((r) => void Object.assign(r.requirements, { extra: null })),
    "missing_eip712_domain",
  ],
  [
    "network",
    () => request((r) => void Object.assign(r.requirements, { network: "eip155:424242" })),
    "unsupported_network",
  ],
  [
    "value",
    () => request((r) => void Object.assign(r.payload.payload.authorization, { value: "-5" })),
    "invalid_request",
  ],
  [
    "signature",
    () => request((r) => void Object.assign(r.payload.payload.authorization, { value: "10001" })),
    "invalid_signature",
  ],
  ["not JSON", async () => "{]", "invalid_request"],
];

function cli(stdin: string): Promise<{ code: number | null; stdout: string }> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_")),
  );
  const child = spawn(
    process.execPath,
    ["bin/facilitator.js", "verify", "-", "--rpc-url", devnet.rpcUrl],
    {
      env: { ...env, FORCE_COLOR: "0" },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout })));
}

/** The CLI's exit status; a network nobody configured an RPC for is a configuration error (2). */
const exitFor = (code: ErrorCode | null, status: number) =>
  code === null
    ? 0
    : code === "invalid_request" || code === "unsupported_network"
      ? 2
      : status < 500
        ? 1
        : 3;

test.each(cases)(
  "%s: the same answer from the core, the HTTP handler and the CLI",
  async (_name, build, code) => {
    const body = await build();
    const handler = createHandler(facilitator);
    const [core, overHttp, process] = await Promise.all([
      (async () => {
        try {
          return await handleVerify(facilitator, JSON.parse(body));
        } catch {
          return null; // not JSON: the core never sees it, the doors parse first
        }
      })(),
      handler({
        method: "POST",
        url: "/verify",
        headers: { "content-type": "application/json" },
        body: Buffer.from(body),
      }),
      cli(body),
    ]);
    const httpBody = JSON.parse(overHttp.body);
    const cliBody = JSON.parse(process.stdout);
    if (code === null) {
      expect(httpBody).toEqual({ success: true, payer: devnet.payers[0]?.address });
    } else {
      expect(httpBody).toMatchObject({ success: false, error: code });
    }
    if (core) {
      expect(core.status).toBe(overHttp.status);
      expect(core.body).toEqual(httpBody);
    }
    expect(cliBody.success).toBe(httpBody.success);
    expect(cliBody.error).toBe(httpBody.error);
    if (code !== "invalid_request") expect(cliBody).toEqual(httpBody);
    expect(process.code).toBe(exitFor(code, overHttp.status));
  },
);
