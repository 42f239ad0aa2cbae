/**
 * Verify, case by case, against the reference facilitator (@x402/core + @x402/evm 2.27) on the same
 * anvil chain: same verdict, and in the x402 dialect the same reason string; in the reference
 * dialect our own codes (design.md §2). Payloads come from the official x402 client unless a case
 * needs something that client will not sign.
 */
import {
  type Address,
  createWalletClient,
  type Hex,
  http,
  publicActions,
  serializeErc6492Signature,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { useWasmSecp256k1 } from "../src/evm/chain/secp256k1.js";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type Devnet, deployErc1271Wallet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { ERRORS, type ErrorCode } from "../src/protocol/errors.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import {
  highS,
  randomNonce,
  signAuthorization,
  signCancelAuthorization,
  wireAuthorization,
  zeroOneV,
} from "./helpers/sign.js";
import {
  clientPayload,
  referenceFacilitator,
  requirementsV1,
  requirementsV2,
} from "./helpers/x402.js";

let devnet: Devnet;
let ours: Facilitator;
let settler: Facilitator;
let reference: ReturnType<typeof referenceFacilitator>;

beforeAll(async () => {
  // Chain id 84532 so x402 v1 (network "base-sepolia") works offline too.
  devnet = await startDevnet({ chainId: 84532 });
  ours = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
  settler = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
  reference = referenceFacilitator(devnet, devnet.payers[4] ?? devnet.facilitator);
});

afterAll(async () => {
  await devnet?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;
interface Pair {
  payload: Json;
  requirements: Json;
}

const payer = (i: number) => {
  const account = devnet.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

const requirementsFor = (version: 1 | 2, overrides: Parameters<typeof requirementsV2>[1] = {}) =>
  version === 1 ? requirementsV1(devnet, overrides) : requirementsV2(devnet, overrides);

async function signed(
  version: 1 | 2,
  overrides: Parameters<typeof requirementsV2>[1] = {},
  who = 0,
): Promise<Pair> {
  const requirements = requirementsFor(version, overrides);
  return { payload: await clientPayload(payer(who), requirements), requirements };
}

/** A payload around a hand-made authorization, shaped as the official client shapes it. */
function wrap(version: 1 | 2, requirements: Json, authorization: Json, signature: Hex): Pair {
  const inner = { authorization, signature };
  const payload =
    version === 2
      ? {
          x402Version: 2,
          resource: { url: "http://localhost/paid" },
          accepted: requirements,
          payload: inner,
        }
      : { x402Version: 1, scheme: "exact", network: requirements.network, payload: inner };
  return { payload, requirements };
}

const now = () => BigInt(Math.floor(Date.now() / 1000));

async function handMade(
  version: 1 | 2,
  fields: Partial<Parameters<typeof signAuthorization>[2]> & { signerKey?: Hex },
  domain: Parameters<typeof signAuthorization>[3] = {},
): Promise<Pair> {
  const requirements = requirementsFor(version);
  const who = payer(1);
  const full = {
    from: who.address,
    to: devnet.payee.address,
    value: 10_000n,
    validAfter: 0n,
    validBefore: now() + 300n,
    nonce: randomNonce(),
    ...fields,
  };
  const signature = await signAuthorization(
    devnet,
    fields.signerKey ?? who.privateKey,
    full,
    domain,
  );
  const { signerKey: _unused, ...rest } = full as typeof full & { signerKey?: Hex };
  return wrap(version, requirements, wireAuthorization(rest), signature);
}

interface Case {
  name: string;
  build: (version: 1 | 2) => Promise<Pair>;
  /** Our reference-dialect code; null for a valid payment. */
  code: ErrorCode | null;
  /** The x402 reason when it is not the table's (v1 and v2 differ for the amount). */
  x402?: (version: 1 | 2) => string;
  /** Where the reference SDK judges differently, and why we do not follow it. */
  referenceDiffers?: (version: 1 | 2) => { isValid: boolean; invalidReason?: string } | undefined;
}

const cases: Case[] = [
  { name: "a valid payment", build: (v) => signed(v), code: null },
  {
    name: "the authorized value is below the required amount",
    build: async (v) => {
      const pair = await signed(v);
      const field = v === 1 ? "maxAmountRequired" : "amount";
      return { ...pair, requirements: { ...pair.requirements, [field]: "20000" } };
    },
    code: "amount_mismatch",
    x402: (v) =>
      v === 1
        ? "invalid_exact_evm_authorization_value"
        : "invalid_exact_evm_payload_authorization_value_mismatch",
  },
  {
    name: "an over-payment (value above the amount) is refused too",
    build: async (v) => {
      const pair = await signed(v);
      const field = v === 1 ? "maxAmountRequired" : "amount";
      return { ...pair, requirements: { ...pair.requirements, [field]: "9999" } };
    },
    code: "amount_mismatch",
    x402: (v) =>
      v === 1
        ? "invalid_exact_evm_authorization_value"
        : "invalid_exact_evm_payload_authorization_value_mismatch",
  },
  {
    name: "the authorization pays someone else",
    build: async (v) => {
      const pair = await signed(v);
      return { ...pair, requirements: { ...pair.requirements, payTo: devnet.facilitator.address } };
    },
    code: "recipient_mismatch",
  },
  {
    name: "the signer is not the payer",
    build: (v) => handMade(v, { signerKey: payer(2).privateKey }),
    code: "invalid_signature",
  },
  {
    name: "the value was changed after signing",
    build: async (v) => {
      const pair = await signed(v);
      pair.payload.payload.authorization.value = "20000";
      const field = v === 1 ? "maxAmountRequired" : "amount";
      return { ...pair, requirements: { ...pair.requirements, [field]: "20000" } };
    },
    code: "invalid_signature",
  },
  {
    name: "the authorization expires in under 6 seconds",
    build: (v) => signed(v, { maxTimeoutSeconds: 3 }),
    code: "authorization_expired",
  },
  {
    name: "the authorization is not valid yet",
    build: (v) => handMade(v, { validAfter: now() + 3600n, validBefore: now() + 7200n }),
    code: "authorization_not_yet_valid",
  },
  {
    name: "the nonce was already used by a settlement",
    build: async (v) => {
      const pair = await signed(v);
      const settled = await handleSettle(settler, pair);
      expect(settled.body).toMatchObject({ success: true });
      return pair;
    },
    code: "nonce_already_used",
  },
  {
    name: "the payer cancelled the authorization",
    build: async (v) => {
      const pair = await signed(v, {}, 1);
      await cancel(payer(1).privateKey, pair.payload.payload.authorization.nonce);
      return pair;
    },
    code: "nonce_already_used",
  },
  {
    name: "the payer's balance is below the amount",
    build: (v) => signed(v, { amount: (2_000_000n * 10n ** 6n).toString() }),
    code: "insufficient_funds",
  },
  {
    name: "requirements.extra.name differs from the token's name()",
    build: (v) => signed(v, { extra: { name: "USD Coin", version: "2" } }),
    code: "token_name_mismatch",
  },
  {
    name: "requirements.extra.version differs from the token's version()",
    build: (v) => signed(v, { extra: { name: "USDC", version: "1" } }),
    code: "token_version_mismatch",
  },
  {
    name: "requirements.extra lacks the EIP-712 domain",
    build: async (v) => {
      const pair = await signed(v);
      return { ...pair, requirements: { ...pair.requirements, extra: {} } };
    },
    code: "missing_eip712_domain",
  },
  {
    name: "the payload names another network",
    build: async (v) => {
      const pair = await signed(v);
      if (v === 2) pair.payload.accepted = { ...pair.payload.accepted, network: "eip155:8453" };
      else pair.payload.network = "base";
      return pair;
    },
    code: "network_mismatch",
  },
  {
    name: "the payload names another scheme",
    build: async (v) => {
      const pair = await signed(v);
      if (v === 2) pair.payload.accepted = { ...pair.payload.accepted, scheme: "upto" };
      else pair.payload.scheme = "upto";
      return pair;
    },
    code: "scheme_mismatch",
  },
  {
    name: "the asset has no contract code",
    build: (v) => signed(v, { asset: privateKeyToAddress(generatePrivateKey()) }),
    code: "asset_not_contract",
    // The v1 reference has no asset check; an eth_call to an empty account "succeeds", so it
    // accepts a payment in a token that does not exist. We refuse it in both versions.
    referenceDiffers: (v) => (v === 1 ? { isValid: true } : undefined),
  },
  {
    name: "the asset does not implement EIP-3009",
    build: (v) => signed(v, { asset: devnet.multicall3 }),
    code: "eip3009_not_supported",
  },
  {
    name: "a high-s signature (recovers off chain, refused by USDC)",
    build: async (v) => {
      const pair = await signed(v);
      pair.payload.payload.signature = highS(pair.payload.payload.signature);
      return pair;
    },
    code: "invalid_signature",
    x402: () => "invalid_exact_evm_transaction_simulation_failed",
  },
  {
    name: "a signature with v of 0/1 (refused by USDC)",
    build: async (v) => {
      const pair = await signed(v);
      pair.payload.payload.signature = zeroOneV(pair.payload.payload.signature);
      return pair;
    },
    code: "invalid_signature",
    x402: () => "invalid_exact_evm_transaction_simulation_failed",
  },
  {
    name: "an EIP-1271 contract wallet whose owner signed",
    build: async (v) => {
      const owner = payer(3);
      const wallet = await deployErc1271Wallet(devnet, owner.address);
      return handMade(v, { from: wallet, signerKey: owner.privateKey });
    },
    code: null,
  },
  {
    name: "an EIP-1271 contract wallet that refuses the signature",
    build: async (v) => {
      const wallet = await deployErc1271Wallet(devnet, payer(3).address);
      return handMade(v, { from: wallet, signerKey: payer(2).privateKey });
    },
    code: "invalid_signature",
  },
  {
    name: "an ERC-6492 signature of an undeployed wallet",
    build: async (v) => {
      const pair = await handMade(v, { from: privateKeyToAddress(generatePrivateKey()) });
      pair.payload.payload.signature = serializeErc6492Signature({
        address: privateKeyToAddress(generatePrivateKey()),
        data: "0xdeadbeef",
        signature: pair.payload.payload.signature,
      });
      return pair;
    },
    code: "unsupported_signature",
  },
];

async function cancel(payerKey: Hex, nonce: Hex) {
  const account = privateKeyToAccount(payerKey);
  const signature = await signCancelAuthorization(devnet, payerKey, nonce);
  const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) }).extend(
    publicActions,
  );
  const hash = await wallet.writeContract({
    chain: null,
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "cancelAuthorization",
    args: [account.address, nonce, signature],
  });
  const receipt = await wallet.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
}

async function referenceVerdict(pair: Pair) {
  try {
    const result = await reference.verify(pair.payload, pair.requirements);
    return { isValid: result.isValid, invalidReason: result.invalidReason };
  } catch (error) {
    return { threw: (error as Error).message };
  }
}

// Recovery runs through the node's ecrecover precompile in the CLI and through libsecp256k1
// (WebAssembly) in `serve`: both must give the same verdicts. The WebAssembly blocks come last,
// since switching is one-way.
describe.each([
  [2, "ecrecover"],
  [1, "ecrecover"],
  [2, "wasm"],
  [1, "wasm"],
] as const)("x402 v%i, %s recovery", (version, recovery) => {
  beforeAll(async () => {
    if (recovery === "wasm") await useWasmSecp256k1();
  });
  test.each(cases)("$name", async (c) => {
    const pair = await c.build(version);
    const referenceDialect = await handleVerify(ours, pair);
    const x402Dialect = await handleVerify(ours, {
      x402Version: version,
      paymentPayload: pair.payload,
      paymentRequirements: pair.requirements,
    });
    const theirs = await referenceVerdict(pair);
    const from = pair.payload.payload.authorization.from as Address;

    if (c.code === null) {
      expect(referenceDialect).toMatchObject({ status: 200, body: { success: true, payer: from } });
      expect(x402Dialect.body).toEqual({ isValid: true, payer: from });
    } else {
      const reason = c.x402?.(version) ?? ERRORS[c.code].x402;
      expect(referenceDialect.status).toBe(400);
      expect(referenceDialect.body).toMatchObject({ success: false, error: c.code });
      expect(typeof referenceDialect.body.message).toBe("string");
      expect(x402Dialect.status).toBe(200);
      expect(x402Dialect.body).toMatchObject({
        isValid: false,
        invalidReason: reason,
        payer: from,
      });
    }

    const expected = c.referenceDiffers?.(version) ?? {
      isValid: c.code === null,
      ...(c.code === null ? {} : { invalidReason: x402Dialect.body.invalidReason }),
    };
    expect(theirs).toMatchObject(expected);
  });
});

describe("requests the reference SDK throws on", () => {
  test("unknown version, scheme and network get unsupported_* codes instead", async () => {
    const pair = await signed(2);
    const v3 = await handleVerify(ours, { ...pair, payload: { ...pair.payload, x402Version: 3 } });
    expect(v3.body).toMatchObject({ success: false, error: "unsupported_version" });
    await expect(
      reference.verify({ ...pair.payload, x402Version: 3 }, pair.requirements),
    ).rejects.toThrow();

    const unknown = { ...pair.requirements, scheme: "deferred" };
    const scheme = await handleVerify(ours, {
      payload: { ...pair.payload, accepted: unknown },
      requirements: unknown,
    });
    expect(scheme.body).toMatchObject({ success: false, error: "unsupported_scheme" });
    await expect(
      reference.verify({ ...pair.payload, accepted: unknown }, unknown as Json),
    ).rejects.toThrow();

    const elsewhere = { ...pair.requirements, network: "eip155:1" };
    const network = await handleVerify(ours, {
      payload: { ...pair.payload, accepted: elsewhere },
      requirements: elsewhere,
    });
    expect(network).toMatchObject({
      status: 400,
      body: { success: false, error: "unsupported_network" },
    });
    await expect(
      reference.verify({ ...pair.payload, accepted: elsewhere }, elsewhere as Json),
    ).rejects.toThrow();
  });
});

describe("the authorization digest", () => {
  test("equals viem's hashTypedData for any domain and message (cached domain separators)", async () => {
    const { hashTypedData } = await import("viem");
    const { authorizationDigest, transferWithAuthorizationTypedData } = await import(
      "../src/evm/exact/eip3009-encoding.js"
    );
    for (const [name, version, chainId] of [
      ["USDC", "2", 84532],
      ["USD Coin", "2", 8453],
      ["USDC", "2", 84532],
      ["Tether USD", "1", 42220],
    ] as const) {
      const domain = { name, version, chainId, verifyingContract: devnet.token.address };
      const message = {
        from: payer(0).address,
        to: devnet.payee.address,
        value: 123456789n,
        validAfter: 1n,
        validBefore: 2n ** 64n,
        nonce: randomNonce(),
      };
      expect(authorizationDigest(domain, message)).toBe(
        hashTypedData(transferWithAuthorizationTypedData(domain, message)),
      );
    }
  });
});

describe("the transfer calldata", () => {
  test("equals viem's ABI encoding for both overloads", async () => {
    const { encodeFunctionData, hexToNumber, sliceHex } = await import("viem");
    const { eip3009Abi, transferCalldata } = await import("../src/evm/exact/eip3009-encoding.js");
    const authorization = {
      from: payer(0).address,
      to: devnet.payee.address,
      value: 2n ** 255n + 7n,
      validAfter: 0n,
      validBefore: 1_900_000_000n,
      nonce: randomNonce(),
    };
    const signature = await signAuthorization(devnet, payer(0).privateKey, authorization);
    for (const sig of [signature, highS(signature), zeroOneV(signature)]) {
      expect(transferCalldata(authorization, sig)).toBe(
        encodeFunctionData({
          abi: eip3009Abi,
          functionName: "transferWithAuthorization",
          args: [
            ...(Object.values(authorization) as [Address, Address, bigint, bigint, bigint, Hex]),
            hexToNumber(sliceHex(sig, 64, 65)),
            sliceHex(sig, 0, 32),
            sliceHex(sig, 32, 64),
          ],
        }),
      );
    }
    const long = `${signature}${"ab".repeat(10)}` as Hex;
    expect(transferCalldata(authorization, long)).toBe(
      encodeFunctionData({
        abi: eip3009Abi,
        functionName: "transferWithAuthorization",
        args: [
          ...(Object.values(authorization) as [Address, Address, bigint, bigint, bigint, Hex]),
          long,
        ],
      }),
    );
  });
});
