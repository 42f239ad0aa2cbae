/** `facilitator pay`'s amounts: --amount in token units, and the signed amount for people. */
import { type Address, getContract, type PublicClient, parseAbi, parseUnits } from "viem";
import { usdcAddressFor } from "../../../evm/devnet/setup.js";
import { decimalAmount, plainSymbol, type TokenUnits } from "../../../protocol/amounts.js";
import { knownToken } from "../../../protocol/networks.js";
import { isUnreachable } from "../../../rpc/rpc.js";
import { UsageError } from "../../io/errors.js";

/** What pay reads of a token: its units, its EIP-712 domain and its EIP-2612 nonces. */
export const tokenAbi = parseAbi([
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function nonces(address owner) view returns (uint256)",
]);

/** The token's decimals and symbol, read from the chain unless known; --amount needs decimals. */
export async function payToken(
  asset: Address,
  chainId: number,
  client: () => Promise<PublicClient>,
  devnet: boolean,
): Promise<TokenUnits> {
  if (devnet && asset === usdcAddressFor(chainId)) return { decimals: 6, symbol: "USDC" };
  const known = knownToken(chainId, asset);
  if (known) return known;
  const read = getContract({ address: asset, abi: tokenAbi, client: await client() }).read;
  const [decimals, symbol] = await Promise.all([
    read.decimals(),
    read.symbol().catch((error) => {
      if (isUnreachable(error)) throw error;
      return undefined;
    }),
  ]);
  return { decimals, symbol: plainSymbol(symbol) };
}

/** Token units ("0.01") in atomic units, with the token's decimals. */
export async function atomicAmount(
  text: string,
  token: () => Promise<TokenUnits>,
): Promise<bigint> {
  if (!/^\d+(\.\d+)?$/.test(text.trim())) {
    throw new UsageError("--amount must be an amount in token units, such as 0.01");
  }
  const { decimals } = await token();
  const fraction = text.trim().split(".")[1] ?? "";
  if (fraction.length > decimals) {
    throw new UsageError(`--amount has more decimals than the token's ${decimals}`);
  }
  const amount = parseUnits(text.trim(), decimals);
  if (amount === 0n) throw new UsageError("--amount must be more than 0");
  return amount;
}

/** "0.01 USDC (10000 units of 0x5FbD…)", or "10000 units of 0x5FbD…" when the token says no decimals. */
export function describeAmount(amount: bigint, asset: string, token: TokenUnits | undefined) {
  if (!token) return `${amount} units of ${asset}`;
  const symbol = token.symbol ? ` ${token.symbol}` : "";
  return `${decimalAmount(amount, token.decimals)}${symbol} (${amount} units of ${asset})`;
}
