/** Lines for a terminal, wrapped with continuations under their value; pipes and JSON as is. */

/** Colour codes (ESC [ … m) take no room on the screen. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const visible = (text: string) => text.replace(ANSI, "").length;

/** The terminal's width, or 0 when `stream` is no terminal. */
export function terminalWidth(stream: NodeJS.WriteStream = process.stdout): number {
  return stream.isTTY && stream.columns ? stream.columns : 0;
}

/** Every line of `text` wrapped to `width` (0: none). */
export function fitLines(text: string, width: number): string {
  if (width <= 0) return text;
  return text
    .split("\n")
    .map((line) => wrapLine(line, width))
    .join("\n");
}

/** `line` wrapped at spaces to `width`, continuations at `indent` (default: where its value is). */
export function wrapLine(line: string, width: number, indent = valueColumn(line)): string {
  if (width <= 0 || visible(line) <= width || width - indent < 20) return line;
  const lead = /^\s*/.exec(line)?.[0] ?? "";
  const lines: string[] = [];
  let current = lead;
  for (const word of line.slice(lead.length).split(" ")) {
    const next = current === lead ? current + word : `${current} ${word}`;
    if (current !== lead && word !== "" && visible(next) > width) {
      lines.push(current);
      current = " ".repeat(indent) + word;
    } else current = next;
  }
  lines.push(current);
  return lines.join("\n");
}

/** Where a line's value starts: its first address, path or URL near the start, else its text. */
function valueColumn(line: string): number {
  const plain = line.replace(ANSI, "");
  const value = /(0x|\/|https?:)/.exec(plain);
  if (value && value.index <= 24) return value.index;
  return /^\s*/.exec(plain)?.[0].length ?? 0;
}
