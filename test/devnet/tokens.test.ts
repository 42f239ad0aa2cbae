/**
 * The devnet's extra tokens: TestPermitToken (EIP-2612, no EIP-3009) and TestPlainToken (neither),
 * and the ERC-20 behaviour (OpenZeppelin 5 errors, infinite approvals) they share.
 */
import {
  type Address,
  domainSeparator,
  erc20Abi,
  type Hex,
  hexToBigInt,
  maxUint256,
  numberToHex,
  parseEventLogs,
  parseSignature,
  serializeSignature,
  toFunctionSelector,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testPermitTokenAbi, testPlainTokenAbi } from "../../src/evm/devnet/artifacts.js";
import {
  type DevAccount,
  type Devnet,
  PAYER_USDC_BALANCE,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import { eip2612PermitTypes } from "../../src/evm/devnet/sign-permit2.js";
import { clientsOf, revertOf, send } from "../helpers/permit2.js";

let devnet: Devnet;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

beforeAll(async () => {
  devnet = await startDevnet();
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

const read = <T>(args: {
  address: Address;
  abi: readonly unknown[];
  functionName: string;
  args?: readonly unknown[];
}) => clientsOf(devnet).publicClient.readContract(args as never) as Promise<T>;

interface PermitMessage {
  owner: Address;
  spender: Address;
  value: bigint;
  nonce: bigint;
  deadline: bigint;
}

function signPermit(signer: DevAccount, message: PermitMessage): Promise<Hex> {
  const token = devnet.permitToken;
  return privateKeyToAccount(signer.privateKey).signTypedData({
    domain: {
      name: token.name,
      version: token.version,
      chainId: devnet.chainId,
      verifyingContract: token.address,
    },
    types: eip2612PermitTypes,
    primaryType: "Permit",
    message,
  });
}

function permitCall(message: PermitMessage, signature: Hex) {
  const { r, s, v } = parseSignature(signature);
  return {
    address: devnet.permitToken.address,
    abi: testPermitTokenAbi,
    functionName: "permit",
    args: [message.owner, message.spender, message.value, message.deadline, Number(v), r, s],
  } as const;
}

function simulatePermit(message: PermitMessage, signature: Hex) {
  return clientsOf(devnet).publicClient.simulateContract({
    account: devnet.facilitator.address,
    ...permitCall(message, signature),
  });
}

const later = () => BigInt(Math.floor(Date.now() / 1000) + 3600);

describe("TestPermitToken", () => {
  it("is 'Permit Token' (PRMT), EIP-712 version 1, 6 decimals, with its domain separator and EIP-5267 domain", async () => {
    const { address } = devnet.permitToken;
    const abi = testPermitTokenAbi;
    expect(await read({ address, abi, functionName: "name" })).toBe("Permit Token");
    expect(await read({ address, abi, functionName: "symbol" })).toBe("PRMT");
    expect(await read({ address, abi, functionName: "version" })).toBe("1");
    expect(await read({ address, abi, functionName: "decimals" })).toBe(6);
    const domain = {
      name: "Permit Token",
      version: "1",
      chainId: devnet.chainId,
      verifyingContract: address,
    };
    expect(await read({ address, abi, functionName: "DOMAIN_SEPARATOR" })).toBe(
      domainSeparator({ domain }),
    );
    expect(await read({ address, abi, functionName: "eip712Domain" })).toEqual([
      "0x0f",
      "Permit Token",
      "1",
      BigInt(devnet.chainId),
      address,
      `0x${"0".repeat(64)}`,
      [],
    ]);
    expect(await read({ address, abi, functionName: "balanceOf", args: [payer(0).address] })).toBe(
      PAYER_USDC_BALANCE,
    );
  });

  it("permit sets the allowance, emits Approval and bumps the nonce", async () => {
    const owner = payer(0);
    const message = {
      owner: owner.address,
      spender: devnet.permit2,
      value: 777n,
      nonce: 0n,
      deadline: later(),
    };
    const receipt = await send(
      devnet,
      devnet.facilitator,
      permitCall(message, await signPermit(owner, message)),
    );
    const [approval] = parseEventLogs({ abi: testPermitTokenAbi, logs: receipt.logs });
    expect(approval).toMatchObject({
      eventName: "Approval",
      args: { owner: owner.address, spender: devnet.permit2, value: 777n },
    });
    const { address } = devnet.permitToken;
    expect(
      await read({
        address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [owner.address, devnet.permit2],
      }),
    ).toBe(777n);
    expect(
      await read({
        address,
        abi: testPermitTokenAbi,
        functionName: "nonces",
        args: [owner.address],
      }),
    ).toBe(1n);
  });

  it("refuses an expired permit, another signer, a replay and a high-s signature", async () => {
    const owner = payer(1);
    const message = {
      owner: owner.address,
      spender: devnet.permit2,
      value: 1n,
      nonce: 0n,
      deadline: later(),
    };
    const expired = { ...message, deadline: 1n };
    expect(await revertOf(simulatePermit(expired, await signPermit(owner, expired)))).toEqual({
      name: "ERC2612ExpiredSignature",
      args: [1n],
    });
    const other = payer(2);
    expect(await revertOf(simulatePermit(message, await signPermit(other, message)))).toEqual({
      name: "ERC2612InvalidSigner",
      args: [other.address, owner.address],
    });
    const signature = await signPermit(owner, message);
    await send(devnet, devnet.facilitator, permitCall(message, signature));
    // Used once: the nonce moved on, so the same signature now recovers someone else.
    const replay = await revertOf(simulatePermit(message, signature));
    expect(replay.name).toBe("ERC2612InvalidSigner");
    const next = { ...message, nonce: 1n };
    const { r, s, yParity } = parseSignature(await signPermit(owner, next));
    const highS = numberToHex(SECP256K1_N - hexToBigInt(s), { size: 32 });
    expect(
      await revertOf(
        simulatePermit(next, serializeSignature({ r, s: highS, yParity: 1 - (yParity ?? 0) })),
      ),
    ).toEqual({
      name: "ECDSAInvalidSignatureS",
      args: [highS],
    });
  });

  it("has no EIP-3009", () => {
    const functions = new Set(
      testPermitTokenAbi.filter((i) => i.type === "function").map((i) => i.name),
    );
    expect(functions.has("permit")).toBe(true);
    for (const name of [
      "transferWithAuthorization",
      "receiveWithAuthorization",
      "authorizationState",
      "cancelAuthorization",
    ]) {
      expect(functions.has(name as never)).toBe(false);
    }
  });
});

describe("TestPlainToken", () => {
  it("is 'Plain Token' (PLAIN), 6 decimals, funded like the others", async () => {
    const { address } = devnet.plainToken;
    expect(await read({ address, abi: testPlainTokenAbi, functionName: "name" })).toBe(
      "Plain Token",
    );
    expect(await read({ address, abi: testPlainTokenAbi, functionName: "symbol" })).toBe("PLAIN");
    expect(await read({ address, abi: testPlainTokenAbi, functionName: "decimals" })).toBe(6);
    expect(await read({ address, abi: testPlainTokenAbi, functionName: "totalSupply" })).toBe(
      5n * PAYER_USDC_BALANCE,
    );
  });

  it("has neither EIP-2612 nor EIP-3009: those calls revert", async () => {
    const { publicClient } = clientsOf(devnet);
    const owner = payer(0).address.slice(2).toLowerCase().padStart(64, "0");
    for (const signature of [
      "nonces(address)",
      "DOMAIN_SEPARATOR()",
      "authorizationState(address,bytes32)",
    ]) {
      const data = `${toFunctionSelector(signature)}${owner}${"0".repeat(64)}` as Hex;
      await expect(publicClient.call({ to: devnet.plainToken.address, data })).rejects.toThrow(
        /revert/i,
      );
    }
    expect(
      testPlainTokenAbi.some(
        (i) => i.type === "function" && ["permit", "transferWithAuthorization"].includes(i.name),
      ),
    ).toBe(false);
  });
});

describe("the ERC-20 core they share", () => {
  it("reverts with OpenZeppelin 5's errors and leaves an unlimited allowance untouched", async () => {
    const { address } = devnet.plainToken;
    const owner = payer(3);
    const spender = payer(4);
    const { publicClient } = clientsOf(devnet);
    const transferFrom = (value: bigint) =>
      publicClient.simulateContract({
        account: spender.address,
        address,
        abi: testPlainTokenAbi,
        functionName: "transferFrom",
        args: [owner.address, spender.address, value],
      });
    expect(await revertOf(transferFrom(1n))).toEqual({
      name: "ERC20InsufficientAllowance",
      args: [spender.address, 0n, 1n],
    });
    await send(devnet, owner, {
      address,
      abi: testPlainTokenAbi,
      functionName: "approve",
      args: [spender.address, maxUint256],
    });
    expect(await revertOf(transferFrom(PAYER_USDC_BALANCE + 1n))).toEqual({
      name: "ERC20InsufficientBalance",
      args: [owner.address, PAYER_USDC_BALANCE, PAYER_USDC_BALANCE + 1n],
    });
    await send(devnet, spender, {
      address,
      abi: testPlainTokenAbi,
      functionName: "transferFrom",
      args: [owner.address, spender.address, 5n],
    });
    expect(
      await read({
        address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [owner.address, spender.address],
      }),
    ).toBe(maxUint256);
  });
});
