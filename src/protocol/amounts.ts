/**
 * Amounts as people read them: a token's atomic units in its own decimals with its symbol, the
 * units kept beside them ("0.01 USDC (10000 units)"), and gas balances to a useful precision.
 */

/** What a message needs to know of a token: its decimals, and its symbol when it has one. */
export interface TokenUnits {
  readonly decimals: number;
  readonly symbol?: string | undefined;
}

/** `units` in whole tokens, exactly: 10000n at 6 decimals is "0.01". */
export function decimalAmount(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/**
 * "0.01 USDC (10000 units)"; a token without a symbol: "0.01 (10000 units)"; one whose decimals
 * are not known: its units as they are ("10000").
 */
export function tokenAmount(units: bigint, token: TokenUnits | undefined): string {
  if (!token) return units.toString();
  const symbol = token.symbol ? ` ${token.symbol}` : "";
  return `${decimalAmount(units, token.decimals)}${symbol} (${units} units)`;
}

/**
 * A balance of gas, rounded down: 4 decimals ("9999.9994"), or below 1, 4 significant digits
 * ("0.0001234"); never more digits than the unit has.
 */
export function gasAmount(units: bigint, decimals: number): string {
  const exact = decimalAmount(units, decimals);
  const [whole = "0", fraction = ""] = exact.split(".");
  const kept =
    whole !== "0" && whole !== "-0"
      ? fraction.slice(0, 4)
      : fraction.slice(0, fraction.search(/[1-9]/) + 4);
  const trimmed = kept.replace(/0+$/, "");
  return trimmed ? `${whole}.${trimmed}` : whole;
}

/**
 * A symbol read from a token contract is the token's own word: kept only when it looks like a
 * ticker, so a hostile token cannot write prose (or control characters) into our messages.
 */
export function plainSymbol(symbol: unknown): string | undefined {
  return typeof symbol === "string" && /^[A-Za-z0-9$][A-Za-z0-9.$_-]{0,11}$/.test(symbol)
    ? symbol
    : undefined;
}
