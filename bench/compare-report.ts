/** bench:compare's report: the table of ours beside the reference, and whether dist/ is fresh. */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export interface Row {
  readonly label: string;
  readonly ours: number | undefined;
  readonly reference: number | undefined;
  readonly digits: number;
  readonly errors?: readonly [number, number];
}

export const fmt = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

export function ratio(ours: number | undefined, reference: number | undefined): number | undefined {
  if (ours === undefined || reference === undefined || reference === 0) return undefined;
  return ours / reference;
}

export function table(rows: readonly Row[]): string {
  const header = ["", "ours", "reference", "ours/reference", "errors ours/ref"];
  const cells = rows.map((row) => [
    row.label,
    fmt(row.ours, row.digits),
    fmt(row.reference, row.digits),
    fmt(ratio(row.ours, row.reference), 2),
    row.errors && row.errors[0] + row.errors[1] > 0 ? `${row.errors[0]}/${row.errors[1]}` : "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]?.length ?? 0)));
  const line = (c: readonly string[]) =>
    c
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n");
}

/** The build bin/facilitator.js loads (its `import("../dist/…")`), relative to the root. */
export function distEntry(): string {
  const bin = readFileSync(path.join(ROOT, "bin/facilitator.js"), "utf8");
  const match = /import\(\s*["']\.\.\/(dist\/[^"']+)["']\s*\)/.exec(bin);
  return match?.[1] ?? "dist/cli/main.js";
}

/** Newest modification time of the files under `dir` whose names pass `keep`, in ms. */
function newest(dir: string, keep: (name: string) => boolean, depth = 0): number {
  if (depth > 8 || !existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(full, keep, depth + 1));
    else if (keep(entry.name)) latest = Math.max(latest, statSync(full).mtimeMs);
  }
  return latest;
}

/** Warns when a source file is newer than the build the bench runs. */
export function distFreshness(): string | undefined {
  const built = newest(path.join(ROOT, "dist"), (name) => name.endsWith(".js"));
  const source = newest(path.join(ROOT, "src"), (name) => name.endsWith(".ts"));
  return source > built
    ? "a file in src/ is newer than dist/: this measures the last build (npm run build)"
    : undefined;
}
