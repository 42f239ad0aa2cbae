/**
 * Builder codes are ours to add (issue 37 item 6). Without a code of ours configured, a payment's
 * `builder-code` extension puts nothing on our transaction. With one, the payment's codes are
 * bounded (its app code and service codes: four, 64 characters; the first that does not fit ends
 * them), the whole suffix is at most SUFFIX_BYTES_LIMIT bytes, and its gas is counted inside the
 * transaction's gas bound, never added to it. On a real anvil devnet, payments made by the
 * official client; the official parser reads the suffixes.
 */
import { parseBuilderCodeSuffixFromCalldata } from "@x402/extensions/builder-code";
import { type Hex, size } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  builderCodeSuffix,
  CALLER_CODE_CHARACTERS,
  CALLER_CODES,
  SUFFIX_BYTES_LIMIT,
} from "../src/evm/chain/builder-code.js";
import { forgetGasEstimates } from "../src/evm/chain/gas.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const OURS = { code: "w".repeat(32), serviceCode: "v".repeat(32) };
/** The most the official client and seller extensions declare: an app code and ten service codes of 32. */
const APP = "a".repeat(32);
const SERVICES = Array.from({ length: 10 }, (_, i) => String(i).padEnd(32, "s"));
const declaring = (info: unknown) => ({ "builder-code": { info } });
const MOST = declaring({ a: APP, s: SERVICES });

const parse = (data: Hex) => parseBuilderCodeSuffixFromCalldata(data);
const suffixOf = (info: unknown, ours: typeof OURS | undefined = OURS) => {
  const suffix = builderCodeSuffix(ours, { x402Version: 2, extensions: declaring(info) });
  return suffix && parse(`0xa9059cbb${suffix.slice(2)}`);
};

describe("what a payment may add", () => {
  test("without a code of ours, nothing, whatever the payment declares", () => {
    expect(builderCodeSuffix(undefined, { x402Version: 2, extensions: MOST })).toBeUndefined();
  });

  test(`with one: ${CALLER_CODES} codes and ${CALLER_CODE_CHARACTERS} characters at most, the first that does not fit ending them`, () => {
    const short = Array.from({ length: 14 }, (_, i) => `svc_${i}`);
    expect(suffixOf({ s: short })).toEqual({
      w: OURS.code,
      s: ["svc_0", "svc_1", "svc_2", "svc_3", OURS.serviceCode],
    });
    expect(suffixOf({ a: "shop", s: short }, { code: "ours", serviceCode: "" })).toEqual({
      a: "shop",
      w: "ours",
      s: ["svc_0", "svc_1", "svc_2"],
    });
    expect(suffixOf({ a: APP, s: SERVICES })).toEqual({
      a: APP,
      w: OURS.code,
      s: [SERVICES[0], OURS.serviceCode],
    });
    // 20 + 32 fit; 20 more would make 72: it and every code after it are left out.
    const cut = suffixOf({ a: "b".repeat(20), s: ["c".repeat(32), "d".repeat(20), "e"] });
    expect(cut).toEqual({ a: "b".repeat(20), w: OURS.code, s: ["c".repeat(32), OURS.serviceCode] });
    // Invalid codes are not counted (the official extension leaves them out too).
    expect(suffixOf({ a: "Not Valid", s: ["NO", "yes"] })).toEqual({
      w: OURS.code,
      s: ["yes", OURS.serviceCode],
    });
  });

  test(`the suffix is at most ${SUFFIX_BYTES_LIMIT} bytes, whatever is declared`, () => {
    // The longest: two codes long enough for two-byte CBOR heads, the rest of the 64 characters.
    const longest = builderCodeSuffix(OURS, {
      x402Version: 2,
      extensions: declaring({
        a: "a".repeat(24),
        s: ["b".repeat(24), "c".repeat(8), "d".repeat(8)],
      }),
    });
    expect(size(longest as Hex)).toBe(SUFFIX_BYTES_LIMIT);
    let seed = 37;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const code = () => "x".repeat(1 + next(32));
    for (let i = 0; i < 500; i++) {
      const info = { a: code(), s: Array.from({ length: next(13) }, code) };
      const suffix = builderCodeSuffix(OURS, { x402Version: 2, extensions: declaring(info) });
      expect(size(suffix as Hex)).toBeLessThanOrEqual(SUFFIX_BYTES_LIMIT);
    }
  });
});

describe("on the devnet", () => {
  let devnet: Devnet;
  let plain: Facilitator;
  let coded: Facilitator;

  beforeAll(async () => {
    devnet = await startDevnet();
    plain = facilitatorOn(devnet);
    coded = facilitatorOn(devnet, { builderCode: OURS });
  }, 60_000);

  afterAll(async () => {
    await devnet?.stop();
  });

  /** A fresh payer's payment of 1,000 through `facilitator`, declaring `extensions`. */
  async function settle(facilitator: Facilitator, extensions?: Record<string, unknown>) {
    const requirements = requirementsV2(devnet, { amount: "1000" });
    const payer = await payerHolding(devnet, 5_000n);
    const payload = { ...(await clientPayload(payer, requirements)), extensions };
    const reply = await handleSettle(facilitator, {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    const chain = chainOf(devnet);
    const balance = () => tokenBalance(devnet, payer.address);
    if (!reply.body.success) return { reply, left: await balance() };
    const hash = reply.body.transaction as Hex;
    const [tx, receipt] = await Promise.all([
      chain.getTransaction({ hash }),
      chain.getTransactionReceipt({ hash }),
    ]);
    return { reply, input: tx.input, gasUsed: receipt.gasUsed, left: await balance() };
  }

  test("without a code of ours, a payment declaring the most codes leaves our calldata as it is", async () => {
    const bare = await settle(plain);
    const declared = await settle(plain, MOST);
    expect(declared.reply.body, JSON.stringify(declared.reply.body)).toMatchObject({
      success: true,
    });
    expect(parse(declared.input as Hex)).toBeUndefined();
    expect(size(declared.input as Hex)).toBe(size(bare.input as Hex));
  }, 60_000);

  test("with one, the payment's codes are cut to the bound", async () => {
    const bare = await settle(plain);
    const declared = await settle(coded, MOST);
    expect(declared.reply.body, JSON.stringify(declared.reply.body)).toMatchObject({
      success: true,
    });
    expect(parse(declared.input as Hex)).toEqual({
      a: APP,
      w: OURS.code,
      s: [SERVICES[0], OURS.serviceCode],
    });
    const added = size(declared.input as Hex) - size(bare.input as Hex);
    expect(added).toBeLessThanOrEqual(SUFFIX_BYTES_LIMIT);
    // Calldata costs 16 gas a non-zero byte and 4 a zero one: the suffix costs what its bytes do,
    // no more (the two payments' random nonces and signatures differ in their zero bytes too).
    // Two payments' execution differs by a few gas on its own (CI once saw 17: the values the
    // token reads and recovers are not the same), so allow that, far under the suffix's ~2,600.
    const EXECUTION_NOISE = 100;
    expect(Number((declared.gasUsed as bigint) - (bare.gasUsed as bigint))).toBeLessThanOrEqual(
      calldataGas(declared.input as Hex) - calldataGas(bare.input as Hex) + EXECUTION_NOISE,
    );
  }, 60_000);

  test("the suffix's gas is inside the gas bound: a payment's codes never raise it", async () => {
    // What a payment with our suffix alone asks for: a bound nothing fits says it, sending nothing.
    forgetGasEstimates();
    const probe = await settle(
      facilitatorOn(devnet, { builderCode: OURS, gasBounds: { all: { eip3009: 21_000n } } }),
    );
    expect(probe.reply.failure?.code).toBe("gas_limit_exceeded");
    const asked = BigInt(
      (/would take ([\d,]+) gas/.exec(probe.reply.failure?.message ?? "")?.[1] ?? "").replaceAll(
        ",",
        "",
      ),
    );
    // A bound with room for that and a little more, not for the caller's codes besides.
    const bound = asked + 600n;
    const tight = facilitatorOn(devnet, {
      builderCode: OURS,
      gasBounds: { all: { eip3009: bound } },
    });
    forgetGasEstimates();
    const most = await settle(tight, MOST);
    expect(most.reply.failure?.code, JSON.stringify(most.reply.body)).toBe("gas_limit_exceeded");
    expect(most.reply.failure?.message).toContain(`over the ${bound.toLocaleString("en-US")}`);
    expect(most.left).toBe(5_000n);
    // Our own code alone fits the same bound, and is sent within it.
    forgetGasEstimates();
    const ours = await settle(tight);
    expect(ours.reply.body, JSON.stringify(ours.reply.body)).toMatchObject({ success: true });
    expect(ours.gasUsed as bigint).toBeLessThanOrEqual(bound);
    expect(ours.left).toBe(4_000n);
  }, 60_000);
});

/** What calldata costs before any execution: 4 gas a zero byte, 16 a non-zero one. */
function calldataGas(input: Hex): number {
  let gas = 0;
  for (let i = 2; i < input.length; i += 2) gas += input.slice(i, i + 2) === "00" ? 4 : 16;
  return gas;
}
