/**
 * /supported and what verify/settle accept are the same set: every kind listed gets past the
 * network check, every network not listed is unsupported_network. Checked with RPCs configured
 * (two devnets, one of them Base Sepolia's chain id for the v1 name), with none configured (the
 * built-in public RPCs), with public RPCs asked for beside a configured one, and with none at all.
 *
 * This machine is offline: the public RPCs cannot be reached. A kind served through one answers
 * chain_unavailable here, naming the network and the public endpoint; online it would be a verify
 * verdict (the signature is for a devnet, so a rejection). Either way it is not
 * unsupported_network, which is what is asserted.
 */

import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { Facilitator, type SupportedKind } from "../src/facilitator.js";
import { caip2, KNOWN_NETWORKS } from "../src/protocol/networks.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { redactUrl } from "../src/rpc/rpc.js";
import { requestOn } from "./helpers/network-request.js";

let local: Devnet;
let baseSepolia: Devnet;

beforeAll(async () => {
  [local, baseSepolia] = await Promise.all([startDevnet(), startDevnet({ chainId: 84532 })]);
});

afterAll(async () => {
  await Promise.all([local?.stop(), baseSepolia?.stop()]);
});

const key = (kind: { x402Version: number; network: string }) =>
  `${kind.x402Version} ${kind.network}`;

/** Every network a caller could name: the registry's, the devnets', and chains nobody knows. */
function candidates(): { x402Version: 1 | 2; network: string }[] {
  const all = new Map<string, { x402Version: 1 | 2; network: string }>();
  const add = (x402Version: 1 | 2, network: string) =>
    all.set(key({ x402Version, network }), { x402Version, network });
  for (const known of KNOWN_NETWORKS) {
    if (known.v1Name) add(1, known.v1Name);
    add(2, caip2(known.chainId));
  }
  for (const network of [local.network, baseSepolia.network, "eip155:999999", "eip155:424242"]) {
    add(2, network);
  }
  return [...all.values()];
}

/** A payment for the kind: really signed on a devnet that serves it, else the local one renamed. */
function requestFor(kind: { x402Version: 1 | 2; network: string }) {
  const payer = (devnet: Devnet) => devnet.payers[0] ?? local.facilitator;
  if (kind.network === local.network) return signSampleRequest(local, { payer: payer(local) });
  if (kind.network === baseSepolia.network || kind.network === baseSepolia.v1Network) {
    return signSampleRequest(baseSepolia, {
      payer: payer(baseSepolia),
      x402Version: kind.x402Version,
    });
  }
  return requestOn(local, kind.network);
}

const publicEndpoint = (network: string): string | undefined => {
  const known = KNOWN_NETWORKS.find((n) => n.v1Name === network || caip2(n.chainId) === network);
  return known?.defaultRpcUrl ? redactUrl(known.defaultRpcUrl) : undefined;
};

/**
 * Verifies a payment for every candidate network. Listed kinds on a configured devnet must verify
 * (and settle as a dry run); listed kinds behind a public RPC must get past the network check; everything not
 * listed must be unsupported_network on verify and on settle.
 */
async function expectSupportedIsAccepted(
  facilitator: Facilitator,
  configured: readonly Devnet[] = [],
): Promise<SupportedKind[]> {
  const all = (await facilitator.supported()).kinds;
  // Every upto kind sits on a network the exact kinds list too (upto is tested in upto.test.ts).
  const kinds = all.filter((kind) => kind.scheme === "exact");
  for (const upto of all.filter((kind) => kind.scheme === "upto")) {
    expect(kinds.some((kind) => kind.network === upto.network && kind.x402Version === 2)).toBe(
      true,
    );
  }
  const listed = new Set(kinds.map(key));
  expect(listed.size, "no kind is listed twice").toBe(kinds.length);
  const onDevnet = new Set(configured.flatMap((d) => [d.network, d.v1Network ?? d.network]));
  await Promise.all(
    candidates().map(async (kind) => {
      const label = `${kind.x402Version} ${kind.network}`;
      const body = await requestFor(kind);
      const verify = await handleVerify(facilitator, body);
      if (!listed.has(key(kind))) {
        expect(verify.failure?.code, label).toBe("unsupported_network");
        const settle = await handleSettle(facilitator, body, { waitUntil: "simulated" });
        expect(settle.failure?.code, label).toBe("unsupported_network");
      } else if (onDevnet.has(kind.network)) {
        expect(verify.body, label).toMatchObject({ success: true });
        const settle = await handleSettle(facilitator, body, { waitUntil: "simulated" });
        expect(settle.body, label).toMatchObject({ success: true });
      } else {
        expect(verify.failure?.code, label).not.toBe("unsupported_network");
        if (verify.failure?.code === "chain_unavailable") {
          const via = `${kind.network} via ${publicEndpoint(kind.network)}: `;
          expect(verify.failure.message.startsWith(via), verify.failure.message).toBe(true);
        }
      }
    }),
  );
  return kinds;
}

const signer = () => privateKeyToAccount(local.facilitator.privateKey);

describe("/supported is exactly what verify and settle accept", () => {
  it("with RPCs configured: their chains, and nothing else", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [local.rpcUrl, baseSepolia.rpcUrl],
      signer: signer(),
    });
    const kinds = await expectSupportedIsAccepted(facilitator, [local, baseSepolia]);
    expect(kinds.map(key).sort()).toEqual(
      ["2 eip155:31337", "1 base-sepolia", "2 eip155:84532"].sort(),
    );
  });

  it("with no RPC configured: the well-known networks behind public RPCs", async () => {
    const facilitator = new Facilitator({ signer: signer(), requestTimeoutMs: 2_000 });
    const kinds = await expectSupportedIsAccepted(facilitator);
    const expected = KNOWN_NETWORKS.filter((n) => n.defaultRpcUrl).flatMap((n) => [
      ...(n.v1Name ? [`1 ${n.v1Name}`] : []),
      `2 ${caip2(n.chainId)}`,
    ]);
    expect(kinds.map(key).sort()).toEqual(expected.sort());
    // A registry network without a public RPC is not served: it is not listed either.
    expect(kinds.map(key)).not.toContain("1 peaq");
  });

  it("with public RPCs asked for beside a configured RPC: both", async () => {
    const facilitator = new Facilitator({
      rpcUrls: [local.rpcUrl],
      useDefaultRpcs: true,
      signer: signer(),
      requestTimeoutMs: 2_000,
    });
    const kinds = (await expectSupportedIsAccepted(facilitator, [local])).map(key);
    expect(kinds).toContain("2 eip155:31337");
    expect(kinds).toContain("2 eip155:8453");
    expect(kinds).toContain("1 base");
  });

  it("with no RPC configured and public RPCs off: nothing", async () => {
    const facilitator = new Facilitator({ useDefaultRpcs: false, signer: signer() });
    expect(await expectSupportedIsAccepted(facilitator)).toEqual([]);
  });
});
