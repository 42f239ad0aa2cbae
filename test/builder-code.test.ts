/**
 * ERC-8021 builder codes (issue 25): with a builder code configured, every EVM transaction we send
 * carries the Schema 2 suffix with our code (`w`) and the app and service codes the payment
 * declares, as the official `BuilderCodeFacilitatorExtension` (@x402/extensions 2.27) builds it.
 *
 * - Our encoder against the official one on a set of inputs (no vectors are published with the
 *   extension; its encoder is the oracle), and what we credit for a payment against the official
 *   extension's `buildDataSuffix` (v1 and v2, invalid codes, our service code), within the bounds
 *   we put on a payment's codes where the official extension takes ten service codes
 *   (test/builder-code-bounds.test.ts).
 * - On a real anvil devnet: the same EIP-3009 payment shape settled by the official facilitator
 *   (2.27, with the extension) and by us: the suffixes parsed by the official
 *   `parseBuilderCodeSuffixFromCalldata` are equal. Then a Permit2 payment, an `upto` payment and
 *   a channel's deposit, claim, settle and refund through us: each transaction carries our code.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  BuilderCodeFacilitatorExtension,
  encodeBuilderCodeSuffix,
  parseBuilderCodeSuffixFromCalldata,
} from "@x402/extensions/builder-code";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type BuilderCodeData,
  builderCodeSuffix,
  encodeBuilderCode,
} from "../src/evm/chain/builder-code.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
import { chainOf, payerHolding } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { officialPermit2Payload, permit2Requirements } from "./helpers/permit2.js";
import { runCli } from "./helpers/run-cli.js";
import { officialUptoPayload, uptoOffer } from "./helpers/upto.js";
import { clientPayload, referenceFacilitator, requirementsV2 } from "./helpers/x402.js";

const OURS = "our_facilitator";
const long = (n: number) => Array.from({ length: n }, (_, i) => `svc_${i}`);

describe("the suffix, against the official encoder", () => {
  const cases: BuilderCodeData[] = [
    { w: OURS },
    { a: "shop" },
    { s: ["agent"] },
    { a: "shop", w: OURS, s: ["agent", "mcp_layer"] },
    { a: "a".repeat(32), w: "w".repeat(32), s: long(11) },
    { w: "x", s: long(24) },
  ];
  test.each(cases.map((data) => [JSON.stringify(data), data]))("%s", (_, data) => {
    const ours = encodeBuilderCode(data);
    expect(ours).toBe(encodeBuilderCodeSuffix(data as never));
    const parsed = parseBuilderCodeSuffixFromCalldata(`0xa9059cbb${ours.slice(2)}` as Hex);
    expect(parsed).toEqual(data);
  });

  const payments = [
    ["v2, app and service codes", 2, { a: "shop", s: ["agent", "seller_svc"] }],
    ["v1: no app code is echoed", 1, { a: "shop", s: ["agent"] }],
    ["invalid codes are left out", 2, { a: "Shop!", s: ["ok_one", "NOT OK", 7, "ok_two"] }],
    ["four service codes (more are cut: builder-code-bounds.test.ts)", 2, { s: long(4) }],
    ["a single service code as a string", 2, { s: "lonely" }],
    ["nothing declared", 2, undefined],
    ["our service code once", 2, { s: ["ours_svc"] }],
  ] as const;
  test.each(payments)("credits as the official extension: %s", (_, x402Version, info) => {
    const extensions = info ? { "builder-code": { info } } : undefined;
    for (const config of [{ builderCode: OURS }, { builderCode: OURS, serviceCode: "ours_svc" }]) {
      const official = new BuilderCodeFacilitatorExtension(config).buildDataSuffix({
        paymentPayload: { x402Version, extensions },
      } as never);
      const ours = builderCodeSuffix(
        { code: config.builderCode, serviceCode: config.serviceCode },
        { x402Version, extensions },
      );
      expect(ours).toBe(official);
    }
  });
});

describe("on the devnet", () => {
  let devnet: Devnet;
  let facilitator: Facilitator;
  const AUTHORIZER = devAccounts[7] as DevAccount;
  const OPERATOR = { name: "operator", receivers: "any" as const };
  const declared = { "builder-code": { info: { a: "shop_app", s: ["buyer_agent"] } } };

  beforeAll(async () => {
    devnet = await startDevnet();
    facilitator = facilitatorOn(devnet, {
      builderCode: { code: OURS },
      receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
      claimBatch: { maxRows: 100, maxWaitMs: 0 },
    });
  }, 60_000);

  afterAll(async () => {
    await devnet?.stop();
  });

  const suffixOf = async (hash: Hex) =>
    parseBuilderCodeSuffixFromCalldata((await chainOf(devnet).getTransaction({ hash })).input);

  test("/supported lists builder-code", async () => {
    expect((await facilitator.supported()).extensions).toContain("builder-code");
  });

  test("an EIP-3009 payment: our suffix is the official facilitator's", async () => {
    const requirements = requirementsV2(devnet, { amount: "1000" });
    const reference = referenceFacilitator(devnet, devAccounts[6] as DevAccount);
    reference.registerExtension(new BuilderCodeFacilitatorExtension({ builderCode: OURS }));
    const theirs = await reference.settle(
      {
        ...(await clientPayload(devnet.payers[0] as DevAccount, requirements)),
        extensions: declared,
      } as never,
      requirements as never,
    );
    expect(theirs.success).toBe(true);
    const payload = {
      ...(await clientPayload(devnet.payers[1] as DevAccount, requirements)),
      extensions: declared,
    };
    const reply = await handleSettle(facilitator, {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(reply.body, JSON.stringify(reply.body)).toMatchObject({ success: true });
    const ours = await suffixOf(reply.body.transaction as Hex);
    expect(ours).toEqual({ a: "shop_app", w: OURS, s: ["buyer_agent"] });
    expect(ours).toEqual(await suffixOf(theirs.transaction as Hex));
  }, 60_000);

  test("every other kind of transaction of ours carries our code", async () => {
    const [, , permit2Payer, uptoPayer, channelPayer] = devnet.payers as DevAccount[];
    for (const payer of [permit2Payer, uptoPayer] as DevAccount[]) {
      await approvePermit2(devnet, payer, devnet.permitToken.address);
    }
    const settle = async (body: Record<string, unknown>, caller?: typeof OPERATOR) => {
      const reply = await handleSettle(facilitator, body, caller ? { caller } : {});
      expect(reply.body, JSON.stringify(reply.body)).toMatchObject({ success: true });
      return suffixOf(reply.body.transaction as Hex);
    };
    const expected = { w: OURS };
    const withDeclared = { a: "shop_app", w: OURS, s: ["buyer_agent"] };

    const permit2 = permit2Requirements(devnet, devnet.permitToken, { amount: "1000" });
    const permit2Payload = await officialPermit2Payload(
      devnet,
      permit2Payer as DevAccount,
      permit2,
    );
    expect(
      await settle({
        x402Version: 2,
        paymentPayload: { ...permit2Payload, extensions: declared },
        paymentRequirements: permit2,
      }),
    ).toEqual(withDeclared);

    const upto = uptoOffer(devnet, 5_000n);
    const uptoPayload = await officialUptoPayload(devnet, uptoPayer as DevAccount, upto);
    expect(
      await settle({
        x402Version: 2,
        paymentPayload: uptoPayload,
        paymentRequirements: { ...upto, amount: "3000" },
      }),
    ).toEqual(expected);

    const offer = batchRequirements(devnet, {
      payTo: devnet.payee.address,
      receiverAuthorizer: AUTHORIZER.address,
      price: 1_000n,
    });
    const payer = channelPayer as DevAccount;
    const { config, voucher, claimRow } = officialChannel(devnet, payer, offer);
    expect(
      await settle(x402Request(offer, await officialPayload(devnet, payer, offer, 10))),
    ).toEqual(expected);
    const manager = managerRequirements(offer);
    expect(
      await settle(x402Request(manager, { type: "claim", claims: [await claimRow(3_000n)] })),
    ).toEqual(expected);
    expect(
      await settle(
        x402Request(manager, {
          type: "settle",
          receiver: devnet.payee.address,
          token: offer.asset,
        }),
      ),
    ).toEqual(expected);
    const refund = x402Request(manager, {
      type: "refund",
      channelConfig: config,
      voucher: await voucher(3_000n),
      amount: "2000",
      refundNonce: "0",
      claims: [],
    });
    expect(await settle(refund, OPERATOR)).toEqual(expected);
  }, 120_000);

  test("from the command line: --builder-code is checked at start, and the settlement carries it", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-builder-code-"));
    try {
      const keyFile = path.join(dir, "key");
      await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
      const env = {
        FACILITATOR_RPC_URL: devnet.rpcUrl,
        FACILITATOR_PRIVATE_KEY_FILE: keyFile,
        FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
        FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
      };
      const requirements = requirementsV2(devnet, { amount: "1000" });
      const request = path.join(dir, "req.json");
      const payload = await clientPayload(await payerHolding(devnet, 1_000n), requirements);
      await writeFile(request, JSON.stringify({ payload, requirements }));
      const bad = await runCli(["settle", request, "--builder-code", "Not-A-Code", "-q"], env);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--builder-code must be a builder code/);
      const settled = await runCli(["settle", request, "--builder-code", "cli_code", "-q"], env);
      expect(settled.code, settled.stderr).toBe(0);
      const hash = (JSON.parse(settled.stdout) as { transactionHash: Hex }).transactionHash;
      expect(await suffixOf(hash)).toEqual({ w: "cli_code" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
