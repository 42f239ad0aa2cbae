/**
 * Permit2 payments (exact scheme, x402 v2) through our facilitator, on the devnet's Permit2 and
 * x402 exact proxy: every verdict the reference knows is compared with the reference facilitator
 * (x402 2.27) on the same payload and chain, in both dialects; then settlement, exactly once,
 * with and without the eip2612GasSponsoring extension.
 */
import { type Address, erc20Abi, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  permit2NonceUsed,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { signPermit2Payment } from "../src/evm/devnet/sign-permit2.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import {
  clientsOf,
  officialPermit2Payload,
  type PermitToken,
  permit2Requirements,
} from "./helpers/permit2.js";
import { referenceFacilitator } from "./helpers/x402.js";

let devnet: Devnet;
let ours: Facilitator;
let reference: ReturnType<typeof referenceFacilitator>;
/** Payer 0 approved Permit2 on the permit token; payer 1 did not. */
let approved: DevAccount;
let unapproved: DevAccount;
let token: PermitToken;

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet);
  reference = referenceFacilitator(devnet, devnet.payee);
  approved = devnet.payers[0] as DevAccount;
  unapproved = devnet.payers[1] as DevAccount;
  token = devnet.permitToken;
  await approvePermit2(devnet, approved, token.address);
});
afterAll(async () => {
  await devnet?.stop();
});

type Requirements = ReturnType<typeof permit2Requirements>;
/** A PaymentPayload as it travels: loosely typed, so tests can bend any field. */
interface Payload {
  readonly [key: string]: unknown;
  readonly accepted: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  readonly extensions?: Record<string, unknown> | undefined;
}
interface Pair {
  payload: Payload;
  requirements: Requirements;
}

/** The signed authorization of a pair. */
const authOf = (pair: Pair) =>
  pair.payload.payload.permit2Authorization as { from: Address; nonce: string };

const now = () => BigInt(Math.floor(Date.now() / 1000));
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

async function official(payer: DevAccount, sponsored = false, amount = "10000"): Promise<Pair> {
  const requirements = permit2Requirements(devnet, token, { amount });
  const payload = await officialPermit2Payload(devnet, payer, requirements, {
    eip2612GasSponsoring: sponsored,
  });
  return { payload: payload as unknown as Payload, requirements };
}

/** A payload signed by our devnet signer with some terms changed, in the official shape. */
async function signed(
  options: Parameters<typeof signPermit2Payment>[3] & { asset?: Address; amount?: bigint },
  signer: DevAccount = approved,
): Promise<Pair> {
  const requirements = permit2Requirements(devnet, token);
  const base = await official(approved);
  const payment = await signPermit2Payment(
    devnet.chainId,
    signer,
    {
      asset: options.asset ?? token.address,
      amount: options.amount ?? 10_000n,
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
    },
    options,
  );
  return { payload: { ...base.payload, payload: { ...payment } }, requirements };
}

function sponsoringInfo(pair: Pair): Record<string, string> {
  const extensions = pair.payload.extensions as Record<string, { info: Record<string, string> }>;
  const info = extensions?.eip2612GasSponsoring?.info;
  if (!info) throw new Error("the client signed no EIP-2612 permit");
  return info;
}

interface Case {
  readonly name: string;
  readonly pair: () => Promise<Pair>;
  /** Our code, or "valid". */
  readonly code: string;
  /** The x402 reason both must give (undefined when valid). */
  readonly reason?: string;
}

const cases: Case[] = [
  { name: "approved payer", pair: () => official(approved), code: "valid" },
  {
    name: "no Permit2 allowance, no extension",
    pair: () => official(unapproved),
    code: "allowance_required",
    reason: "permit2_allowance_required",
  },
  {
    name: "no allowance, eip2612GasSponsoring",
    pair: () => official(unapproved, true),
    code: "valid",
  },
  {
    name: "spender is not the exact proxy",
    pair: () => signed({ spender: privateKeyToAccount(generatePrivateKey()).address }),
    code: "spender_mismatch",
    reason: "invalid_permit2_spender",
  },
  {
    name: "witness pays someone else",
    pair: async () => {
      const pair = await official(approved);
      return {
        ...pair,
        requirements: { ...pair.requirements, payTo: devnet.payers[4]?.address as Address },
      };
    },
    code: "recipient_mismatch",
    reason: "invalid_permit2_recipient_mismatch",
  },
  {
    name: "deadline passed",
    pair: () => signed({ deadline: now() + 2n }),
    code: "authorization_expired",
    reason: "permit2_deadline_expired",
  },
  {
    name: "not valid yet",
    pair: () => signed({ validAfter: now() + 3600n }),
    code: "authorization_not_yet_valid",
    reason: "permit2_not_yet_valid",
  },
  {
    name: "amount differs",
    pair: async () => {
      const pair = await official(approved);
      return { ...pair, requirements: { ...pair.requirements, amount: "20000" } };
    },
    code: "amount_mismatch",
    reason: "permit2_amount_mismatch",
  },
  {
    name: "another token than the asset",
    pair: async () => {
      const pair = await official(approved);
      return { ...pair, requirements: { ...pair.requirements, asset: devnet.plainToken.address } };
    },
    code: "asset_mismatch",
    reason: "permit2_token_mismatch",
  },
  {
    name: "asset without code",
    pair: async () => {
      const asset = privateKeyToAccount(generatePrivateKey()).address;
      const pair = await signed({ asset });
      return { ...pair, requirements: { ...pair.requirements, asset } };
    },
    code: "asset_not_contract",
    reason: "asset_not_deployed_contract",
  },
  {
    name: "signed by another key",
    pair: () => signed({ from: approved.address }, unapproved),
    code: "invalid_signature",
    reason: "invalid_permit2_signature",
  },
  {
    name: "more than the payer holds",
    pair: () => official(approved, false, (10n ** 15n).toString()),
    code: "insufficient_funds",
    reason: "permit2_insufficient_balance",
  },
  {
    name: "network differs",
    pair: async () => {
      const pair = await official(approved);
      const accepted = { ...pair.payload.accepted, network: "eip155:1" };
      return { ...pair, payload: { ...pair.payload, accepted } };
    },
    code: "network_mismatch",
    reason: "invalid_exact_evm_network_mismatch",
  },
  ...(
    [
      ["from", () => devnet.payers[3]?.address as string, "eip2612_from_mismatch"],
      ["asset", () => devnet.token.address as string, "eip2612_asset_mismatch"],
      ["spender", () => devnet.payee.address as string, "eip2612_spender_not_permit2"],
      ["deadline", () => String(now() + 2n), "eip2612_deadline_expired"],
      ["amount", () => "ten", "invalid_eip2612_extension_format"],
    ] as const
  ).map(
    ([field, value, reason]): Case => ({
      name: `eip2612GasSponsoring with a bad ${field}`,
      pair: async () => {
        const pair = clone(await official(unapproved, true));
        sponsoringInfo(pair)[field] = value();
        return pair;
      },
      code: "invalid_extension",
      reason,
    }),
  ),
];

describe("verify: our verdicts and the reference's, on the same payloads", () => {
  test.each(cases)("$name", async ({ pair, code, reason }) => {
    const { payload, requirements } = await pair();
    const theirs = await reference.verify(payload as never, requirements as never);
    const mine = await handleVerify(ours, { payload, requirements });
    const x402 = await handleVerify(ours, {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    if (code === "valid") {
      expect(theirs).toMatchObject({ isValid: true });
      expect(mine.body).toMatchObject({
        success: true,
        payer: authOf({ payload, requirements }).from,
      });
      expect(x402.body).toMatchObject({ isValid: true });
      return;
    }
    expect(theirs).toMatchObject({ isValid: false, invalidReason: reason });
    expect(mine.status).toBe(400);
    expect(mine.body).toMatchObject({ success: false, error: code });
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });
  });

  test("a nonce already used: the reference's simulation_failed, our finer nonce_already_used", async () => {
    const pair = await official(approved);
    expect((await handleSettle(ours, pair)).body).toMatchObject({ success: true });
    const theirs = await reference.verify(pair.payload as never, pair.requirements as never);
    expect(theirs).toMatchObject({ isValid: false, invalidReason: "permit2_simulation_failed" });
    const mine = await handleVerify(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: pair.requirements,
    });
    expect(mine.body).toMatchObject({ isValid: false, invalidReason: "permit2_simulation_failed" });
    expect((await handleVerify(ours, pair)).body).toMatchObject({ error: "nonce_already_used" });
  });

  test("extra.assetTransferMethod naming another method: refused (the reference ignores it)", async () => {
    const pair = await official(approved);
    const requirements = {
      ...pair.requirements,
      extra: { ...pair.requirements.extra, assetTransferMethod: "eip3009" },
    };
    expect(await reference.verify(pair.payload as never, requirements as never)).toMatchObject({
      isValid: true,
    });
    expect((await handleVerify(ours, { payload: pair.payload, requirements })).body).toMatchObject({
      success: false,
      error: "transfer_method_mismatch",
    });
    // Left out, it means "pick the default": accepted.
    const { assetTransferMethod: _, ...extra } = pair.requirements.extra;
    const unnamed = { ...pair.requirements, extra };
    expect(
      (await handleVerify(ours, { payload: pair.payload, requirements: unnamed })).body,
    ).toMatchObject({
      success: true,
    });
  });
});

describe("settle", () => {
  const balance = (who: Address) =>
    clientsOf(devnet).publicClient.readContract({
      address: token.address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [who],
    });

  test("an approved payer's payment lands once; a replay is nonce_already_used", async () => {
    const pair = await official(approved);
    const before = await balance(devnet.payee.address);
    const replies = await Promise.all(Array.from({ length: 8 }, () => handleSettle(ours, pair)));
    const wins = replies.filter((r) => r.body.success);
    expect(wins).toHaveLength(1);
    for (const r of replies.filter((r) => !r.body.success)) {
      expect(["settlement_in_progress", "nonce_already_used"]).toContain(r.body.error);
    }
    expect(await balance(devnet.payee.address)).toBe(before + 10_000n);
    const nonce = BigInt(authOf(pair).nonce);
    expect(await permit2NonceUsed(devnet, approved.address, nonce)).toBe(true);
    const receipt = await clientsOf(devnet).publicClient.getTransactionReceipt({
      hash: wins[0]?.body.transactionHash as Hex,
    });
    expect(receipt.to?.toLowerCase()).toBe(devnet.exactPermit2Proxy.toLowerCase());
    expect((await handleSettle(ours, pair)).body).toMatchObject({ error: "nonce_already_used" });
  });

  test("eip2612GasSponsoring: permit and transfer in one transaction, no approval before", async () => {
    const payer = devnet.payers[2] as DevAccount;
    const pair = await official(payer, true);
    const before = await balance(devnet.payee.address);
    const reply = await handleSettle(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: pair.requirements,
    });
    expect(reply.body).toMatchObject({ success: true, payer: payer.address });
    expect(await balance(devnet.payee.address)).toBe(before + 10_000n);
  });

  test("a payer with Permit2 allowance for one payment is refused a second one at once", async () => {
    const payer = devnet.payers[3] as DevAccount;
    await approvePermit2(devnet, payer, token.address, 10_000n);
    const pairs = await Promise.all([official(payer), official(payer)]);
    const replies = await Promise.all(pairs.map((pair) => handleSettle(ours, pair)));
    const codes = replies.map((r) => (r.body.success ? "success" : r.body.error)).sort();
    expect(codes).toEqual(["allowance_required", "success"]);
  });
});

describe("the Permit2 digest", () => {
  test("equals viem's hashTypedData for random authorizations on several chains", async () => {
    const { permit2Digest, permit2TypedData } = await import(
      "../src/evm/exact/permit2-encoding.js"
    );
    const { hashTypedData } = await import("viem");
    const random = () => privateKeyToAccount(generatePrivateKey()).address;
    const big = () =>
      BigInt(`0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`);
    for (const chainId of [1, 8453, 31337, 84532]) {
      for (let i = 0; i < 10; i++) {
        const authorization = {
          from: random(),
          permitted: { token: random(), amount: big() },
          spender: random(),
          nonce: big(),
          deadline: big(),
          witness: { to: random(), validAfter: big() },
        };
        expect(permit2Digest(chainId, authorization)).toBe(
          hashTypedData(permit2TypedData(chainId, authorization)),
        );
      }
    }
  });
});
