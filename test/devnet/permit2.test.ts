/**
 * Our Permit2 (signature-transfer part) called directly: the canonical selectors and EIP-712
 * domain, the plain and witness transfers, unordered nonces, the signature forms it accepts
 * (65-byte, EIP-2098 64-byte, high-s, EIP-1271) and each custom error.
 */
import {
  type Address,
  domainSeparator,
  erc20Abi,
  type Hex,
  hexToBigInt,
  keccak256,
  maxUint256,
  numberToHex,
  parseEventLogs,
  parseSignature,
  serializeCompactSignature,
  serializeSignature,
  signatureToCompactSignature,
  stringToHex,
  toFunctionSelector,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { permit2Abi } from "../../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  deployErc1271Wallet,
  permit2NonceUsed,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import { randomPermit2Nonce } from "../../src/evm/devnet/sign-permit2.js";
import { abiSignatures, clientsOf, revertOf, send } from "../helpers/permit2.js";

let devnet: Devnet;
const AMOUNT = 10_000n;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

beforeAll(async () => {
  devnet = await startDevnet();
  await approvePermit2(devnet, payer(0), devnet.permitToken.address);
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

interface Permit {
  permitted: { token: Address; amount: bigint };
  nonce: bigint;
  deadline: bigint;
}

function permitOf(changes: Partial<Permit> = {}): Permit {
  return {
    permitted: { token: devnet.permitToken.address, amount: AMOUNT },
    nonce: randomPermit2Nonce(),
    deadline: BigInt(Math.floor(Date.now() / 1000) + 300),
    ...changes,
  };
}

/** `signer` signs a plain PermitTransferFrom whose spender is the facilitator (who calls Permit2). */
function signPermit(signer: DevAccount, permit: Permit): Promise<Hex> {
  return privateKeyToAccount(signer.privateKey).signTypedData({
    domain: { name: "Permit2", chainId: devnet.chainId, verifyingContract: devnet.permit2 },
    types: {
      PermitTransferFrom: [
        { name: "permitted", type: "TokenPermissions" },
        { name: "spender", type: "address" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
      ],
      TokenPermissions: [
        { name: "token", type: "address" },
        { name: "amount", type: "uint256" },
      ],
    },
    primaryType: "PermitTransferFrom",
    message: { ...permit, spender: devnet.facilitator.address },
  });
}

function transferArgs(permit: Permit, owner: Address, signature: Hex, requested = AMOUNT) {
  return [
    permit,
    { to: devnet.payee.address, requestedAmount: requested },
    owner,
    signature,
  ] as const;
}

function simulate(args: ReturnType<typeof transferArgs>) {
  return clientsOf(devnet).publicClient.simulateContract({
    account: devnet.facilitator.address,
    address: devnet.permit2,
    abi: permit2Abi,
    functionName: "permitTransferFrom",
    args,
  });
}

function transfer(args: ReturnType<typeof transferArgs>) {
  return send(devnet, devnet.facilitator, {
    address: devnet.permit2,
    abi: permit2Abi,
    functionName: "permitTransferFrom",
    args,
  });
}

function payeeBalance(token: Address = devnet.permitToken.address) {
  return clientsOf(devnet).publicClient.readContract({
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [devnet.payee.address],
  });
}

describe("Permit2's interface", () => {
  it("has Uniswap Permit2's selectors for what x402 uses, and its custom errors", () => {
    const selectors = Object.fromEntries(
      [...abiSignatures(permit2Abi)]
        .filter((s) => s.startsWith("function ") || s.startsWith("error "))
        .map((s) => {
          const signature = s.replace(/^\w+ /, "").replace(/ returns .*$/, "");
          return [signature.replace(/\(.*$/, ""), toFunctionSelector(signature)];
        }),
    );
    expect(selectors).toEqual({
      DOMAIN_SEPARATOR: "0x3644e515",
      nonceBitmap: "0x4fe02b44",
      invalidateUnorderedNonces: "0x3ff9dcb1",
      permitTransferFrom: "0x30f28b7a",
      permitWitnessTransferFrom: "0x137c29fe",
      InvalidAmount: "0x3728b83d",
      SignatureExpired: "0xcd21db4f",
      InvalidNonce: "0x756688fe",
      InvalidSignatureLength: "0x4be6321b",
      InvalidSignature: "0x8baa579f",
      InvalidSigner: "0x815e1d64",
      InvalidContractSignature: "0xb0669cbc",
    });
  });

  it("DOMAIN_SEPARATOR is EIP-712 {name: Permit2, chainId, verifyingContract}, no version", async () => {
    const actual = await clientsOf(devnet).publicClient.readContract({
      address: devnet.permit2,
      abi: permit2Abi,
      functionName: "DOMAIN_SEPARATOR",
    });
    expect(actual).toBe(
      domainSeparator({
        domain: { name: "Permit2", chainId: devnet.chainId, verifyingContract: devnet.permit2 },
      }),
    );
  });
});

describe("permitTransferFrom", () => {
  it("moves up to the permitted amount to any destination the spender picks", async () => {
    const permit = permitOf();
    const before = await payeeBalance();
    const receipt = await transfer(
      transferArgs(permit, payer(0).address, await signPermit(payer(0), permit), 4_000n),
    );
    expect(receipt.status).toBe("success");
    expect(await payeeBalance()).toBe(before + 4_000n);
    expect(await permit2NonceUsed(devnet, payer(0).address, permit.nonce)).toBe(true);
  });

  it("refuses more than permitted (InvalidAmount) and a passed deadline (SignatureExpired)", async () => {
    const permit = permitOf();
    const signature = await signPermit(payer(0), permit);
    expect(
      await revertOf(simulate(transferArgs(permit, payer(0).address, signature, AMOUNT + 1n))),
    ).toEqual({
      name: "InvalidAmount",
      args: [AMOUNT],
    });
    const expired = permitOf({ deadline: 1n });
    expect(
      await revertOf(
        simulate(transferArgs(expired, payer(0).address, await signPermit(payer(0), expired))),
      ),
    ).toEqual({
      name: "SignatureExpired",
      args: [1n],
    });
  });

  it("accepts 64-byte EIP-2098 and high-s signatures; refuses other lengths, v, and other signers", async () => {
    const owner = payer(0).address;
    const compact = permitOf();
    const full = await signPermit(payer(0), compact);
    const short = serializeCompactSignature(signatureToCompactSignature(parseSignature(full)));
    expect(short.length).toBe(2 + 128);
    await transfer(transferArgs(compact, owner, short));

    // (r, n - s) with the other v recovers the same key: Permit2 does not insist on low s.
    const malleable = permitOf();
    const { r, s, yParity } = parseSignature(await signPermit(payer(0), malleable));
    const highS = serializeSignature({
      r,
      s: numberToHex(SECP256K1_N - hexToBigInt(s), { size: 32 }),
      yParity: 1 - (yParity ?? 0),
    });
    await transfer(transferArgs(malleable, owner, highS));

    const permit = permitOf();
    const signature = await signPermit(payer(0), permit);
    expect(await revertOf(simulate(transferArgs(permit, owner, `${signature}00`)))).toEqual({
      name: "InvalidSignatureLength",
      args: [],
    });
    const badV = `${signature.slice(0, 130)}1d` as Hex; // v = 29: ecrecover finds no key
    expect(await revertOf(simulate(transferArgs(permit, owner, badV)))).toEqual({
      name: "InvalidSignature",
      args: [],
    });
    const other = await signPermit(payer(1), permit);
    expect(await revertOf(simulate(transferArgs(permit, owner, other)))).toEqual({
      name: "InvalidSigner",
      args: [],
    });
  });

  it("asks an EIP-1271 owner (TestERC1271Wallet); InvalidContractSignature when it says no", async () => {
    const wallet = await deployErc1271Wallet(devnet, payer(2).address);
    const permit = permitOf({ permitted: { token: devnet.token.address, amount: AMOUNT } });
    // The wallet has not approved Permit2: a valid signature gets as far as the transfer.
    expect(
      await revertOf(simulate(transferArgs(permit, wallet, await signPermit(payer(2), permit)))),
    ).toEqual({
      name: "TRANSFER_FROM_FAILED",
      args: [],
    });
    expect(
      await revertOf(simulate(transferArgs(permit, wallet, await signPermit(payer(3), permit)))),
    ).toEqual({
      name: "InvalidContractSignature",
      args: [],
    });
  });
});

describe("unordered nonces", () => {
  it("bit (nonce & 255) of word (nonce >> 8) is set once used; a reuse is InvalidNonce", async () => {
    const owner = payer(0).address;
    const word = 7n;
    const nonce = (word << 8n) | 200n;
    const permit = permitOf({ nonce });
    const signature = await signPermit(payer(0), permit);
    await transfer(transferArgs(permit, owner, signature));
    const bitmap = await clientsOf(devnet).publicClient.readContract({
      address: devnet.permit2,
      abi: permit2Abi,
      functionName: "nonceBitmap",
      args: [owner, word],
    });
    expect(bitmap).toBe(1n << 200n);
    expect(await revertOf(simulate(transferArgs(permit, owner, signature)))).toEqual({
      name: "InvalidNonce",
      args: [],
    });
  });

  it("invalidateUnorderedNonces cancels nonces before use, the largest one included", async () => {
    const owner = payer(0);
    const last = maxUint256; // word 2^248 - 1, bit 255
    const receipt = await send(devnet, owner, {
      address: devnet.permit2,
      abi: permit2Abi,
      functionName: "invalidateUnorderedNonces",
      args: [last >> 8n, 1n << 255n],
    });
    const [event] = parseEventLogs({ abi: permit2Abi, logs: receipt.logs });
    expect(event).toMatchObject({
      eventName: "UnorderedNonceInvalidation",
      args: { owner: owner.address, word: last >> 8n, mask: 1n << 255n },
    });
    expect(await permit2NonceUsed(devnet, owner.address, last)).toBe(true);
    const permit = permitOf({ nonce: last });
    expect(
      await revertOf(
        simulate(transferArgs(permit, owner.address, await signPermit(owner, permit))),
      ),
    ).toEqual({ name: "InvalidNonce", args: [] });
  });
});

describe("permitWitnessTransferFrom", () => {
  it("binds the caller's witness: hashes the type stub + witnessTypeString and the witness hash", async () => {
    // The spender is the facilitator here, calling Permit2 itself with a witness of its own type.
    const witnessTypeString =
      "Note note)Note(bytes32 memo)TokenPermissions(address token,uint256 amount)";
    const memo = keccak256(stringToHex("order 42"));
    const witness = keccak256(
      `${keccak256(stringToHex("Note(bytes32 memo)"))}${memo.slice(2)}` as Hex,
    );
    const permit = permitOf();
    const signature = await privateKeyToAccount(payer(0).privateKey).signTypedData({
      domain: { name: "Permit2", chainId: devnet.chainId, verifyingContract: devnet.permit2 },
      types: {
        PermitWitnessTransferFrom: [
          { name: "permitted", type: "TokenPermissions" },
          { name: "spender", type: "address" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
          { name: "note", type: "Note" },
        ],
        Note: [{ name: "memo", type: "bytes32" }],
        TokenPermissions: [
          { name: "token", type: "address" },
          { name: "amount", type: "uint256" },
        ],
      },
      primaryType: "PermitWitnessTransferFrom",
      message: { ...permit, spender: devnet.facilitator.address, note: { memo } },
    });
    const args = [
      permit,
      { to: devnet.payee.address, requestedAmount: AMOUNT },
      payer(0).address,
      witness,
      witnessTypeString,
      signature,
    ] as const;
    const call = (a: typeof args) =>
      clientsOf(devnet).publicClient.simulateContract({
        account: devnet.facilitator.address,
        address: devnet.permit2,
        abi: permit2Abi,
        functionName: "permitWitnessTransferFrom",
        args: a,
      });
    await call(args);
    expect(
      await revertOf(
        call([permit, args[1], args[2], keccak256("0x00"), witnessTypeString, signature]),
      ),
    ).toEqual({ name: "InvalidSigner", args: [] });
  });
});
