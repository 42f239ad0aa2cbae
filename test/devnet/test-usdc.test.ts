import { randomBytes } from "node:crypto";
import {
  type Address,
  BaseError,
  type Chain,
  ContractFunctionRevertedError,
  concat,
  createPublicClient,
  createWalletClient,
  decodeFunctionResult,
  domainSeparator,
  encodeErrorResult,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  hashTypedData,
  hexToNumber,
  http,
  keccak256,
  numberToHex,
  type PrivateKeyAccount,
  type PublicClient,
  parseEventLogs,
  slice,
  stringToHex,
  type Transport,
  toHex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileContracts } from "../../scripts/compile-contracts.js";
import * as artifacts from "../../src/evm/devnet/artifacts.js";
import {
  multicall3Abi,
  solcVersion,
  sourceHash,
  testErc1271WalletAbi,
  testUsdcAbi,
} from "../../src/evm/devnet/artifacts.js";
import {
  type Devnet,
  deployErc1271Wallet,
  devnetChain,
  startDevnet,
} from "../../src/evm/devnet/index.js";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const authorizationFields = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

const types = {
  TransferWithAuthorization: authorizationFields,
  ReceiveWithAuthorization: authorizationFields,
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

let devnet: Devnet;
let chain: Chain;
let publicClient: PublicClient<Transport, Chain>;
let token: Address;
let payer: PrivateKeyAccount;
let otherPayer: PrivateKeyAccount;
let facilitator: PrivateKeyAccount;
let payee: PrivateKeyAccount;

beforeAll(async () => {
  devnet = await startDevnet();
  chain = devnetChain(devnet.rpcUrl, devnet.chainId);
  publicClient = createPublicClient({
    chain,
    transport: http(devnet.rpcUrl, { retryCount: 0 }),
    pollingInterval: 50,
    cacheTime: 0,
  });
  token = devnet.token.address;
  const [first, second] = devnet.payers;
  if (!first || !second) throw new Error("devnet has fewer than two payers");
  payer = privateKeyToAccount(first.privateKey);
  otherPayer = privateKeyToAccount(second.privateKey);
  facilitator = privateKeyToAccount(devnet.facilitator.privateKey);
  payee = privateKeyToAccount(devnet.payee.privateKey);
});

afterAll(async () => {
  await devnet?.stop();
});

const domain = () => ({
  name: "USDC",
  version: "2",
  chainId: devnet.chainId,
  verifyingContract: token,
});

const newNonce = (): Hex => toHex(randomBytes(32));

async function chainTime(): Promise<bigint> {
  return (await publicClient.getBlock()).timestamp;
}

/** An authorization from `payer` to the payee, valid for an hour. */
async function authorization(overrides: Partial<Authorization> = {}): Promise<Authorization> {
  return {
    from: payer.address,
    to: payee.address,
    value: 1_000_000n,
    validAfter: 0n,
    validBefore: (await chainTime()) + 3600n,
    nonce: newNonce(),
    ...overrides,
  };
}

function sign(
  signer: PrivateKeyAccount,
  primaryType: "TransferWithAuthorization" | "ReceiveWithAuthorization",
  message: Authorization,
): Promise<Hex> {
  return signer.signTypedData({ domain: domain(), types, primaryType, message });
}

/** Splits a 65-byte signature into the (v, r, s) arguments. */
function vrs(signature: Hex): [number, Hex, Hex] {
  return [hexToNumber(slice(signature, 64, 65)), slice(signature, 0, 32), slice(signature, 32, 64)];
}

function authArgs(a: Authorization) {
  return [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;
}

function walletFor(account: PrivateKeyAccount) {
  return createWalletClient({
    chain,
    account,
    transport: http(devnet.rpcUrl, { retryCount: 0 }),
  });
}

type TransferArgs =
  | readonly [Address, Address, bigint, bigint, bigint, Hex, number, Hex, Hex]
  | readonly [Address, Address, bigint, bigint, bigint, Hex, Hex];

/** Simulates `functionName(args)` from `sender`, then sends it and returns the receipt. */
async function send(
  sender: PrivateKeyAccount,
  functionName: "transferWithAuthorization" | "receiveWithAuthorization",
  args: TransferArgs,
) {
  const { request } = await publicClient.simulateContract({
    account: sender,
    address: token,
    abi: testUsdcAbi,
    functionName,
    args,
  });
  const hash = await walletFor(sender).writeContract(request);
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  return receipt;
}

/** The revert reason of a call that must revert. */
async function revertReason(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    if (error instanceof BaseError) {
      const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
      if (reverted instanceof ContractFunctionRevertedError) return reverted.reason;
    }
    throw error;
  }
  throw new Error("expected the call to revert, but it succeeded");
}

function simulate(
  functionName: "transferWithAuthorization" | "receiveWithAuthorization",
  args: TransferArgs,
  sender: PrivateKeyAccount = facilitator,
) {
  return publicClient.simulateContract({
    account: sender,
    address: token,
    abi: testUsdcAbi,
    functionName,
    args,
  });
}

function balanceOf(address: Address): Promise<bigint> {
  return publicClient.readContract({
    address: token,
    abi: testUsdcAbi,
    functionName: "balanceOf",
    args: [address],
  });
}

function authorizationState(authorizer: Address, nonce: Hex): Promise<boolean> {
  return publicClient.readContract({
    address: token,
    abi: testUsdcAbi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });
}

describe("TestUSDC metadata", () => {
  it("has USDC's name, symbol, version and decimals", async () => {
    const read = (functionName: "name" | "symbol" | "version") =>
      publicClient.readContract({ address: token, abi: testUsdcAbi, functionName });
    expect(await read("name")).toBe("USDC");
    expect(await read("symbol")).toBe("USDC");
    expect(await read("version")).toBe("2");
    expect(
      await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "decimals" }),
    ).toBe(6);
  });

  it("computes the EIP-712 domain separator from the chain id and its own address", async () => {
    const onChain = await publicClient.readContract({
      address: token,
      abi: testUsdcAbi,
      functionName: "DOMAIN_SEPARATOR",
    });
    expect(onChain).toBe(domainSeparator({ domain: domain() }));
  });

  it("uses the EIP-3009 typehashes", async () => {
    const read = (
      functionName:
        | "TRANSFER_WITH_AUTHORIZATION_TYPEHASH"
        | "RECEIVE_WITH_AUTHORIZATION_TYPEHASH"
        | "CANCEL_AUTHORIZATION_TYPEHASH",
    ) => publicClient.readContract({ address: token, abi: testUsdcAbi, functionName });
    expect(await read("TRANSFER_WITH_AUTHORIZATION_TYPEHASH")).toBe(
      "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267",
    );
    expect(await read("RECEIVE_WITH_AUTHORIZATION_TYPEHASH")).toBe(
      keccak256(
        stringToHex(
          "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
        ),
      ),
    );
    expect(await read("CANCEL_AUTHORIZATION_TYPEHASH")).toBe(
      keccak256(stringToHex("CancelAuthorization(address authorizer,bytes32 nonce)")),
    );
  });
});

describe("transferWithAuthorization", () => {
  it("moves funds and emits Transfer and AuthorizationUsed (v, r, s overload)", async () => {
    const auth = await authorization({ value: 1_234_567n });
    const [v, r, s] = vrs(await sign(payer, "TransferWithAuthorization", auth));
    const [payerBefore, payeeBefore] = await Promise.all([
      balanceOf(payer.address),
      balanceOf(payee.address),
    ]);

    const receipt = await send(facilitator, "transferWithAuthorization", [
      ...authArgs(auth),
      v,
      r,
      s,
    ]);

    expect(await balanceOf(payer.address)).toBe(payerBefore - auth.value);
    expect(await balanceOf(payee.address)).toBe(payeeBefore + auth.value);
    expect(await authorizationState(payer.address, auth.nonce)).toBe(true);
    const events = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs });
    expect(events.map((e) => e.eventName)).toEqual(["AuthorizationUsed", "Transfer"]);
    expect(events[0]?.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
    expect(events[1]?.args).toEqual({ from: payer.address, to: payee.address, value: auth.value });
    expect(events.every((e) => e.address.toLowerCase() === token.toLowerCase())).toBe(true);
  });

  it("moves funds and emits Transfer and AuthorizationUsed (bytes signature overload)", async () => {
    const auth = await authorization({ value: 42n });
    const signature = await sign(payer, "TransferWithAuthorization", auth);
    const payeeBefore = await balanceOf(payee.address);

    const receipt = await send(facilitator, "transferWithAuthorization", [
      ...authArgs(auth),
      signature,
    ]);

    expect(await balanceOf(payee.address)).toBe(payeeBefore + 42n);
    const events = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs });
    expect(events.map((e) => e.eventName)).toEqual(["AuthorizationUsed", "Transfer"]);
    expect(events[1]?.args).toEqual({ from: payer.address, to: payee.address, value: 42n });
  });

  it("rejects a nonce that was already used", async () => {
    const auth = await authorization();
    const signature = await sign(payer, "TransferWithAuthorization", auth);
    await send(facilitator, "transferWithAuthorization", [...authArgs(auth), signature]);

    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), signature])),
    ).toBe("FiatTokenV2: authorization is used or canceled");
  });

  it("rejects an expired authorization", async () => {
    const auth = await authorization({ validBefore: (await chainTime()) - 10n });
    const signature = await sign(payer, "TransferWithAuthorization", auth);
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), signature])),
    ).toBe("FiatTokenV2: authorization is expired");
  });

  it("rejects an authorization that is not yet valid", async () => {
    const auth = await authorization({ validAfter: (await chainTime()) + 600n });
    const signature = await sign(payer, "TransferWithAuthorization", auth);
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), signature])),
    ).toBe("FiatTokenV2: authorization is not yet valid");
  });

  it("rejects a high-s (malleable) signature even though it recovers to the payer", async () => {
    const auth = await authorization();
    const [v, r, s] = vrs(await sign(payer, "TransferWithAuthorization", auth));
    const highS = numberToHex(SECP256K1_N - BigInt(s), { size: 32 });
    const flippedV = v === 27 ? 28 : 27;

    const reason = await revertReason(
      simulate("transferWithAuthorization", [...authArgs(auth), flippedV, r, highS]),
    );
    expect(reason).toBe("ECRecover: invalid signature 's' value");
    const bytesReason = await revertReason(
      simulate("transferWithAuthorization", [
        ...authArgs(auth),
        concat([r, highS, numberToHex(flippedV, { size: 1 })]),
      ]),
    );
    expect(bytesReason).toBe("ECRecover: invalid signature 's' value");
  });

  it("rejects v = 0 or 1", async () => {
    const auth = await authorization();
    const [v, r, s] = vrs(await sign(payer, "TransferWithAuthorization", auth));
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), v - 27, r, s])),
    ).toBe("ECRecover: invalid signature 'v' value");
  });

  it("rejects a signature by someone other than `from`", async () => {
    const auth = await authorization();
    const signature = await sign(otherPayer, "TransferWithAuthorization", auth);
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), signature])),
    ).toBe("FiatTokenV2: invalid signature");
    // A signature over different terms (here: another value) is no better.
    const tampered = { ...auth, value: auth.value + 1n };
    const original = await sign(payer, "TransferWithAuthorization", auth);
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(tampered), original])),
    ).toBe("FiatTokenV2: invalid signature");
  });

  it("rejects a transfer larger than the payer's balance", async () => {
    const poor = privateKeyToAccount(generatePrivateKey());
    const auth = await authorization({ from: poor.address, value: 1n });
    const signature = await sign(poor, "TransferWithAuthorization", auth);
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), signature])),
    ).toBe("ERC20: transfer amount exceeds balance");
  });
});

describe("receiveWithAuthorization", () => {
  it("can only be submitted by the payee, and then moves funds", async () => {
    const auth = await authorization({ value: 500n });
    const signature = await sign(payer, "ReceiveWithAuthorization", auth);
    const args = [...authArgs(auth), signature] as const;

    expect(await revertReason(simulate("receiveWithAuthorization", args, facilitator))).toBe(
      "FiatTokenV2: caller must be the payee",
    );

    const payeeBefore = await balanceOf(payee.address);
    const receipt = await send(payee, "receiveWithAuthorization", args);
    expect(await balanceOf(payee.address)).toBe(payeeBefore + 500n);
    const events = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs });
    expect(events.map((e) => e.eventName)).toEqual(["AuthorizationUsed", "Transfer"]);
  });

  it("accepts the (v, r, s) overload and does not accept a TransferWithAuthorization signature", async () => {
    const auth = await authorization({ value: 7n });
    const transferSig = await sign(payer, "TransferWithAuthorization", auth);
    expect(
      await revertReason(
        simulate("receiveWithAuthorization", [...authArgs(auth), transferSig], payee),
      ),
    ).toBe("FiatTokenV2: invalid signature");

    const [v, r, s] = vrs(await sign(payer, "ReceiveWithAuthorization", auth));
    const payeeBefore = await balanceOf(payee.address);
    await send(payee, "receiveWithAuthorization", [...authArgs(auth), v, r, s]);
    expect(await balanceOf(payee.address)).toBe(payeeBefore + 7n);
  });
});

describe("cancelAuthorization", () => {
  async function signCancel(authorizer: PrivateKeyAccount, nonce: Hex): Promise<Hex> {
    return authorizer.signTypedData({
      domain: domain(),
      types,
      primaryType: "CancelAuthorization",
      message: { authorizer: authorizer.address, nonce },
    });
  }

  it("marks the nonce used, emits AuthorizationCanceled, and blocks a later transfer", async () => {
    const auth = await authorization();
    const transferSig = await sign(payer, "TransferWithAuthorization", auth);
    const [v, r, s] = vrs(await signCancel(payer, auth.nonce));
    expect(await authorizationState(payer.address, auth.nonce)).toBe(false);

    const hash = await walletFor(facilitator).writeContract({
      address: token,
      abi: testUsdcAbi,
      functionName: "cancelAuthorization",
      args: [payer.address, auth.nonce, v, r, s],
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    const events = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs });
    expect(events.map((e) => [e.eventName, e.args])).toEqual([
      ["AuthorizationCanceled", { authorizer: payer.address, nonce: auth.nonce }],
    ]);
    expect(await authorizationState(payer.address, auth.nonce)).toBe(true);

    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), transferSig])),
    ).toBe("FiatTokenV2: authorization is used or canceled");
  });

  it("bytes overload: needs the authorizer's signature and an unused nonce", async () => {
    const nonce = newNonce();
    const cancel = (signature: Hex) =>
      publicClient.simulateContract({
        account: facilitator,
        address: token,
        abi: testUsdcAbi,
        functionName: "cancelAuthorization",
        args: [payer.address, nonce, signature],
      });
    expect(await revertReason(cancel(await signCancel(otherPayer, nonce)))).toBe(
      "FiatTokenV2: invalid signature",
    );

    const good = await signCancel(payer, nonce);
    const { request } = await cancel(good);
    const hash = await walletFor(facilitator).writeContract(request);
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    expect(await authorizationState(payer.address, nonce)).toBe(true);
    expect(await revertReason(cancel(good))).toBe("FiatTokenV2: authorization is used or canceled");
  });
});

describe("EIP-1271 contract wallet payer", () => {
  let wallet: Address;
  let owner: PrivateKeyAccount;

  beforeAll(async () => {
    owner = privateKeyToAccount(generatePrivateKey());
    wallet = await deployErc1271Wallet(devnet, owner.address);
  });

  function digestOf(auth: Authorization): Hex {
    return hashTypedData({
      domain: domain(),
      types,
      primaryType: "TransferWithAuthorization",
      message: auth,
    });
  }

  it("is set up with its owner and 1,000,000 USDC", async () => {
    expect(
      await publicClient.readContract({
        address: wallet,
        abi: testErc1271WalletAbi,
        functionName: "owner",
      }),
    ).toBe(owner.address);
    expect(await balanceOf(wallet)).toBe(1_000_000n * 10n ** 6n);
  });

  it("pays with a signature its owner made (bytes overload)", async () => {
    const auth = await authorization({ from: wallet, value: 2_500_000n });
    const signature = await owner.sign({ hash: digestOf(auth) });
    const [walletBefore, payeeBefore] = await Promise.all([
      balanceOf(wallet),
      balanceOf(payee.address),
    ]);

    const receipt = await send(facilitator, "transferWithAuthorization", [
      ...authArgs(auth),
      signature,
    ]);

    expect(await balanceOf(wallet)).toBe(walletBefore - 2_500_000n);
    expect(await balanceOf(payee.address)).toBe(payeeBefore + 2_500_000n);
    const events = parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs });
    expect(events[0]?.args).toEqual({ authorizer: wallet, nonce: auth.nonce });
  });

  it("rejects a signature by anyone but its owner", async () => {
    const auth = await authorization({ from: wallet });
    const stranger = await otherPayer.sign({ hash: digestOf(auth) });
    expect(
      await revertReason(simulate("transferWithAuthorization", [...authArgs(auth), stranger])),
    ).toBe("FiatTokenV2: invalid signature");
    // The owner's typed-data signature over the same digest works, so only the signer was wrong.
    const ownSignature = await owner.sign({ hash: digestOf(auth) });
    await expect(
      simulate("transferWithAuthorization", [...authArgs(auth), ownSignature]),
    ).resolves.toBeDefined();
  });
});

describe("ERC-20 and EIP-2612", () => {
  it("permit sets an allowance that transferFrom spends, and no more", async () => {
    const spender = facilitator;
    const deadline = (await chainTime()) + 3600n;
    const nonce = await publicClient.readContract({
      address: token,
      abi: testUsdcAbi,
      functionName: "nonces",
      args: [payer.address],
    });
    const signature = await payer.signTypedData({
      domain: domain(),
      types,
      primaryType: "Permit",
      message: { owner: payer.address, spender: spender.address, value: 300n, nonce, deadline },
    });
    const [v, r, s] = vrs(signature);
    const permitHash = await walletFor(spender).writeContract({
      address: token,
      abi: testUsdcAbi,
      functionName: "permit",
      args: [payer.address, spender.address, 300n, deadline, v, r, s],
    });
    expect((await publicClient.waitForTransactionReceipt({ hash: permitHash })).status).toBe(
      "success",
    );
    expect(
      await publicClient.readContract({
        address: token,
        abi: erc20Abi,
        functionName: "allowance",
        args: [payer.address, spender.address],
      }),
    ).toBe(300n);

    const transferFrom = (value: bigint) =>
      publicClient.simulateContract({
        account: spender,
        address: token,
        abi: erc20Abi,
        functionName: "transferFrom",
        args: [payer.address, payee.address, value],
      });
    expect(await revertReason(transferFrom(301n))).toBe("ERC20: transfer amount exceeds allowance");
    const payeeBefore = await balanceOf(payee.address);
    const { request } = await transferFrom(300n);
    const hash = await walletFor(spender).writeContract(request);
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    expect(await balanceOf(payee.address)).toBe(payeeBefore + 300n);
  });

  it("rejects a transfer to the zero address", async () => {
    const reason = await revertReason(
      publicClient.simulateContract({
        account: payer,
        address: token,
        abi: erc20Abi,
        functionName: "transfer",
        args: ["0x0000000000000000000000000000000000000000", 1n],
      }),
    );
    expect(reason).toBe("ERC20: transfer to the zero address");
  });
});

describe("Multicall3", () => {
  const balanceCall = (address: Address) =>
    encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [address] });
  // Reverts: the multicall contract has no allowance from the payer.
  const failingCall = () =>
    encodeFunctionData({
      abi: erc20Abi,
      functionName: "transferFrom",
      args: [payer.address, payee.address, 1n],
    });
  const revertData = (message: string) =>
    encodeErrorResult({
      abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }],
      errorName: "Error",
      args: [message],
    });

  it("aggregate3 returns each call's result and tolerates failures it is allowed", async () => {
    const { result } = await publicClient.simulateContract({
      address: devnet.multicall3,
      abi: multicall3Abi,
      functionName: "aggregate3",
      args: [
        [
          { target: token, allowFailure: false, callData: balanceCall(payer.address) },
          { target: token, allowFailure: true, callData: failingCall() },
          {
            target: devnet.multicall3,
            allowFailure: false,
            callData: encodeFunctionData({ abi: multicall3Abi, functionName: "getChainId" }),
          },
        ],
      ],
    });
    expect(result).toHaveLength(3);
    expect(result[0]?.success).toBe(true);
    expect(
      decodeFunctionResult({
        abi: erc20Abi,
        functionName: "balanceOf",
        data: result[0]?.returnData ?? "0x",
      }),
    ).toBe(await balanceOf(payer.address));
    expect(result[1]?.success).toBe(false);
    expect(result[1]?.returnData).toBe(revertData("ERC20: transfer amount exceeds allowance"));
    expect(BigInt(result[2]?.returnData ?? "0x")).toBe(BigInt(devnet.chainId));

    const reason = await revertReason(
      publicClient.simulateContract({
        address: devnet.multicall3,
        abi: multicall3Abi,
        functionName: "aggregate3",
        args: [[{ target: token, allowFailure: false, callData: failingCall() }]],
      }),
    );
    expect(reason).toBe("Multicall3: call failed");
  });

  it("tryAggregate reports failures, or reverts on them when success is required", async () => {
    const calls = [
      { target: token, callData: failingCall() },
      { target: token, callData: balanceCall(payee.address) },
    ] as const;
    const { result } = await publicClient.simulateContract({
      address: devnet.multicall3,
      abi: multicall3Abi,
      functionName: "tryAggregate",
      args: [false, calls],
    });
    expect(result.map((r) => r.success)).toEqual([false, true]);
    expect(BigInt(result[1]?.returnData ?? "0x")).toBe(await balanceOf(payee.address));

    const reason = await revertReason(
      publicClient.simulateContract({
        address: devnet.multicall3,
        abi: multicall3Abi,
        functionName: "tryAggregate",
        args: [true, calls],
      }),
    );
    expect(reason).toBe("Multicall3: call failed");
  });

  it("works with viem's multicall and answers the block/chain getters", async () => {
    const results = await publicClient.multicall({
      allowFailure: true,
      contracts: [
        { address: token, abi: testUsdcAbi, functionName: "balanceOf", args: [payer.address] },
        { address: token, abi: testUsdcAbi, functionName: "version" },
        {
          address: devnet.multicall3,
          abi: multicall3Abi,
          functionName: "getEthBalance",
          args: [facilitator.address],
        },
        { address: devnet.multicall3, abi: multicall3Abi, functionName: "getBlockNumber" },
        {
          address: devnet.multicall3,
          abi: multicall3Abi,
          functionName: "getCurrentBlockTimestamp",
        },
      ],
    });
    expect(results.map((r) => r.status)).toEqual([
      "success",
      "success",
      "success",
      "success",
      "success",
    ]);
    expect(results[0]?.result).toBe(await balanceOf(payer.address));
    expect(results[1]?.result).toBe("2");
    expect(results[2]?.result).toBe(
      await publicClient.getBalance({ address: facilitator.address }),
    );
    const block = await publicClient.getBlock();
    expect(results[3]?.result).toBeGreaterThan(0n);
    expect(results[3]?.result).toBeLessThanOrEqual(block.number);
    expect(results[4]?.result).toBeLessThanOrEqual(block.timestamp);
    expect(results[4]?.result).toBeGreaterThan(block.timestamp - 10n);

    const { result } = await publicClient.simulateContract({
      address: devnet.multicall3,
      abi: multicall3Abi,
      functionName: "aggregate",
      args: [[{ target: token, callData: balanceCall(payer.address) }]],
    });
    expect(BigInt(result[1][0] ?? "0x")).toBe(await balanceOf(payer.address));
  });
});

describe("artifacts.ts", () => {
  it("matches the Solidity sources (run `npm run contracts` if this fails)", {
    timeout: 60_000,
  }, () => {
    const compiled = compileContracts();
    expect(compiled.sourceHash).toBe(sourceHash);
    expect(compiled.solcVersion).toBe(solcVersion);
    const generated = artifacts as unknown as Record<string, unknown>;
    for (const contract of compiled.contracts) {
      expect(generated[`${contract.prefix}Abi`]).toEqual(contract.abi);
      expect(generated[`${contract.prefix}Bytecode`]).toBe(contract.bytecode);
      expect(generated[`${contract.prefix}RuntimeBytecode`]).toBe(contract.runtimeBytecode);
    }
  });

  it("is the code that the devnet placed on the chain", async () => {
    expect(await publicClient.getCode({ address: token })).toBe(artifacts.testUsdcRuntimeBytecode);
    expect(await publicClient.getCode({ address: devnet.multicall3 })).toBe(
      artifacts.multicall3RuntimeBytecode,
    );
  });
});
