/** Durations as people read them in messages: "62 s", "3 min 5 s", "2 h 4 min", "3 days 2 h". */
export function durationInWords(seconds: number | bigint): string {
  const total = Math.abs(Math.round(Number(seconds)));
  if (total < 120) return `${total} s`;
  const units: [number, string][] = [
    [86_400, " days"],
    [3_600, " h"],
    [60, " min"],
    [1, " s"],
  ];
  const parts: string[] = [];
  let rest = total;
  for (const [size, name] of units) {
    if (rest >= size && parts.length < 2) {
      const n = Math.floor(rest / size);
      parts.push(`${n}${n === 1 && name === " days" ? " day" : name}`);
      rest -= n * size;
    } else if (parts.length > 0) break;
  }
  return parts.join(" ");
}

/** "expired 62 s ago" or "expires in 3 s, less than the 6 s a settlement needs", then the field. */
export function tooLate(
  what: string,
  field: string,
  deadline: bigint,
  now: bigint,
  headroom: bigint,
) {
  const when =
    deadline <= now
      ? `expired ${durationInWords(now - deadline)} ago`
      : `expires in ${durationInWords(deadline - now)}, less than the ${headroom} s a settlement needs`;
  return `${what} ${when} (${field} ${deadline})`;
}

/** Why a start time is not reached yet: "is valid only in 2 min 5 s (validAfter …)". */
export function tooEarly(what: string, field: string, validAfter: bigint, now: bigint) {
  return `${what} is valid only in ${durationInWords(validAfter - now)} (${field} ${validAfter})`;
}

/** An error's (or a text's) first line, for answers and logs that must stay one line. */
export const firstLine = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";

/** JSON with keys sorted at every level (undefined left out): two spellings compare equal. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Whether `value` is a JSON object (not null, not an array). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `node[key]` when `node` is an object (a field of a JSON body not yet checked), else undefined. */
export const field = (node: unknown, key: string): unknown =>
  typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined;
