/** Every `--help` wrapped to the terminal (80 columns in a pipe), long flags' text below them. */
import { type AddHelpTextContext, type Command, Help } from "commander";
import { terminalWidth } from "./fit-lines.js";

/** The widest the flag column grows; longer flags sit on a line of their own. */
const TERM_COLUMN = 30;
/** Fewer columns than this beside the flags, and descriptions go below their flags, indented. */
const MIN_DESCRIPTION = 36;
const INDENT = 2;
const SPACER = 2;
const STACKED_INDENT = 8;

function formatItem(
  this: Help,
  term: string,
  termWidth: number,
  description: string,
  helper: Help,
): string {
  const pad = " ".repeat(INDENT);
  if (!description) return pad + term;
  const width = this.helpWidth ?? 80;
  const column = INDENT + termWidth + SPACER;
  const beside = width - column >= MIN_DESCRIPTION;
  const at = beside ? column : STACKED_INDENT;
  const lines = helper.boxWrap(description, Math.max(width - at, 1)).split("\n");
  const body = lines.map((line) => " ".repeat(at) + line);
  if (beside && helper.displayWidth(term) <= termWidth) {
    const first = pad + term.padEnd(termWidth + term.length - helper.displayWidth(term));
    return [first + " ".repeat(SPACER) + lines[0], ...body.slice(1)].join("\n");
  }
  return [pad + term, ...body].join("\n");
}

/** Lays out `command`'s help (commander does not pass configureHelp to added subcommands). */
export function wrapHelp(command: Command): Command {
  return command.configureHelp({
    minWidthToWrap: 1,
    padWidth(cmd: Command, helper: Help) {
      return Math.min(Help.prototype.padWidth.call(this, cmd, helper), TERM_COLUMN);
    },
    formatItem,
  });
}

/** How the examples of a command's help that run against `facilitator devnet` begin. */
export const DEVNET_EXAMPLE = `Example (against \`facilitator devnet\`, which prints these paths):
  source /tmp/facilitator-devnet-XXXX/devnet.env`;

/** Text after the flags: margin lines reflowed into paragraphs; indented lines (examples) kept. */
export function afterHelp(text: string): (context: AddHelpTextContext) => string {
  return (context) => {
    const wrapper = new Help();
    wrapper.minWidthToWrap = 1;
    // The width commander lays help out to: the terminal's, else 80.
    const width = terminalWidth(context.error ? process.stderr : process.stdout) || 80;
    const out: string[] = [];
    let paragraph: string[] = [];
    const flush = () => {
      if (paragraph.length > 0) out.push(wrapper.boxWrap(paragraph.join(" "), width));
      paragraph = [];
    };
    for (const line of text.split("\n")) {
      if (line.trim() !== "" && !/^\s/.test(line)) {
        paragraph.push(line.trim());
        continue;
      }
      flush();
      out.push(line);
    }
    flush();
    return out.join("\n");
  };
}
