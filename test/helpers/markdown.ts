/**
 * Just enough Markdown for the tests that keep the docs true: the pages, their headings' anchors
 * (as GitHub makes them), their links, and the rows of their tables.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** README.md and every page in docs/, as paths relative to the repository. */
export function docPages(): string[] {
  const docs = readdirSync(path.join(REPO, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs.sort()];
}

export function readDoc(page: string): string {
  return readFileSync(path.join(REPO, page), "utf8");
}

/** The text with fenced code blocks blanked out (links and headings there are not real). */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) =>
    block.replace(/[^\n]/g, " "),
  );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a page offers, repeated headings numbered as GitHub does (-1, -2, …). */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

export interface Link {
  readonly target: string;
  readonly line: number;
}

/** The links of a page outside code: `[text](target)`, targets as written. */
export function linksOf(text: string): Link[] {
  const prose = withoutFences(text).replace(/`[^`\n]*`/g, (span) => " ".repeat(span.length));
  const links: Link[] = [];
  for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const line = prose.slice(0, match.index).split("\n").length;
    links.push({ target: match[1] as string, line });
  }
  return links;
}

/**
 * Where a relative link points, or why it points nowhere: the file must exist, and an anchor must
 * be a heading of the Markdown page it names.
 */
export function brokenLink(fromPage: string, target: string): string | undefined {
  const [file = "", anchor] = target.split("#", 2);
  const resolved = file ? path.join(path.dirname(fromPage), file) : fromPage;
  const absolute = path.join(REPO, resolved);
  if (!existsSync(absolute)) return `${resolved} does not exist`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith(".md"))
    return `${resolved} is not a Markdown page, so it has no #${anchor}`;
  const anchors = anchorsOf(readFileSync(absolute, "utf8"));
  return anchors.has(anchor) ? undefined : `${resolved} has no heading #${anchor}`;
}

/** The rows of every table on a page, each as its cells (trimmed), header and rule rows left out. */
export function tableRows(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of withoutFences(text).split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("|")) continue;
    // Split on pipes that are not escaped (`\|` is a pipe inside a cell).
    const cells = trimmed
      .slice(1, trimmed.endsWith("|") ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim());
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows;
}

/** The text of one section: from its heading to the next heading of the same or a higher level. */
export function section(text: string, heading: string): string {
  const lines = text.split("\n");
  // Headings are looked for outside code blocks, where a shell comment also starts with #.
  const prose = withoutFences(text).split("\n");
  const start = prose.findIndex((line) => /^#{1,6}\s/.test(line) && line.includes(heading));
  if (start < 0) throw new Error(`no heading with "${heading}"`);
  const level = /^#+/.exec(prose[start] as string)?.[0].length ?? 1;
  const higher = new RegExp(`^#{1,${level}}\\s`);
  const end = prose.findIndex((line, i) => i > start && higher.test(line));
  return lines.slice(start, end < 0 ? undefined : end).join("\n");
}
