/** `facilitator doctor`'s token check: whether EIP-3009 and Permit2 payments can work on each chain. */
import { type Address, getAddress, getContract, parseAbi } from "viem";
import { usdcAddressFor } from "../../../evm/devnet/setup.js";
import {
  EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_ADDRESS,
} from "../../../evm/exact/permit2-encoding.js";
import { caip2, knownNetwork } from "../../../protocol/networks.js";
import { unreachableReason } from "../../../rpc/rpc.js";
import { type ChainSeen, type Finding, finding, type Level } from "./doctor-checks.js";

const tokenAbi = parseAbi([
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);

/** Whether EIP-3009 (the chain's first such stablecoin) and Permit2 payments can work here. */
export async function checkTokens(chains: readonly ChainSeen[]): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const { chainId, devnet, client } of chains) {
    const known = knownNetwork(chainId)?.assets?.find((a) => a.transfer !== "permit2");
    const token: { address: Address; label: string; name?: string; version?: string } | undefined =
      devnet
        ? { address: usdcAddressFor(chainId), label: "test USDC" }
        : known
          ? {
              address: getAddress(known.address),
              label: known.symbol ?? known.name,
              name: known.name,
              version: known.version,
            }
          : undefined;
    const parts: string[] = [];
    let level: Level = "ok";
    try {
      if (token) {
        const read = getContract({ address: token.address, abi: tokenAbi, client }).read;
        const [name, version, eip3009] = await Promise.all([
          read.name().catch(() => undefined),
          read.version().catch(() => undefined),
          read.authorizationState([token.address, `0x${"00".repeat(32)}`]).then(
            () => true,
            () => false,
          ),
        ]);
        if (!eip3009) {
          level = "warning";
          parts.push(`${token.label} ${token.address} answers no EIP-3009 authorizationState`);
        } else if (token.name !== undefined && (name !== token.name || version !== token.version)) {
          level = "warning";
          parts.push(
            `${token.label} ${token.address} names itself "${name}" version "${version}", the registry says "${token.name}" "${token.version}"`,
          );
        } else {
          parts.push(`${token.label} ${token.address} "${name}" version "${version}": EIP-3009 ok`);
        }
      } else {
        parts.push(
          "no well-known EIP-3009 token here: payments carry their token in the requirements",
        );
      }
      const [permit2, proxy] = await Promise.all([
        client.getCode({ address: PERMIT2_ADDRESS }),
        client.getCode({ address: EXACT_PERMIT2_PROXY_ADDRESS }),
      ]);
      const present = (code: string | undefined) => code !== undefined && code !== "0x";
      parts.push(
        present(permit2) && present(proxy)
          ? "Permit2 and the x402 exact proxy: ok"
          : `Permit2 payments cannot settle here (no ${present(permit2) ? "x402 exact Permit2 proxy" : "Permit2"})`,
      );
    } catch (error) {
      findings.push(
        finding("tokens", "unreachable", `${caip2(chainId)}: ${unreachableReason(error)}`),
      );
      continue;
    }
    findings.push(finding("tokens", level, `${caip2(chainId)}: ${parts.join("; ")}`));
  }
  return findings;
}
