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

/** "0.01 USDC (10000 units)", "0.01 (10000 units)" without a symbol, "10000" without decimals. */
export function tokenAmount(units: bigint, token: TokenUnits | undefined): string {
  if (!token) return units.toString();
  const symbol = token.symbol ? ` ${token.symbol}` : "";
  return `${decimalAmount(units, token.decimals)}${symbol} (${units} units)`;
}

/** A gas balance rounded down: 4 decimals ("9999.9994"); below 1, 4 digits ("0.0001234"). */
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

/** A token's own symbol, kept only when it looks like a ticker (a hostile token writes no prose). */
export function plainSymbol(symbol: unknown): string | undefined {
  return typeof symbol === "string" && /^[A-Za-z0-9$][A-Za-z0-9.$_-]{0,11}$/.test(symbol)
    ? symbol
    : undefined;
}
