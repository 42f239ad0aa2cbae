/**
 * `npm start` (`facilitator devnet --demo`) on an 80x24 terminal (issue 28): once the demo has
 * run, the `source …/devnet.env` line the user must copy is the last line on the screen, below
 * the commands to try, instead of scrolled away 30 lines up.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { type DevnetProcess, ROOT, spawnDevnet, stop, waitFor } from "./helpers/devnet-process.js";

const COLUMNS = 80;
const ROWS = 24;

let devnet: DevnetProcess | undefined;
afterAll(() => stop(devnet));

/** The rows a terminal of `columns` shows for `text` (every character here is one column wide). */
function rowsOf(text: string, columns: number): string[] {
  const lines = text.replace(/\n$/, "").split("\n");
  return lines.flatMap((line) => {
    const rows: string[] = [];
    for (let at = 0; at < Math.max(1, line.length); at += columns) {
      rows.push(line.slice(at, at + columns));
    }
    return rows;
  });
}

it("npm start ends with the devnet.env line on the screen's last row", async () => {
  const scripts = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")).scripts;
  expect(scripts.start).toBe("node bin/facilitator.js devnet --demo");
  // npm start's command, on a free port so that a devnet someone runs on 8545 is left alone.
  devnet = spawnDevnet(["--demo", "--port", "0"]);
  await waitFor(devnet, "settle again");
  await waitFor(devnet, "devnet.env");
  // Nothing more comes once the devnet runs: wait for the output to settle.
  let seen = "";
  while (seen !== devnet.stdout()) {
    seen = devnet.stdout();
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const rows = rowsOf(seen, COLUMNS);
  const screen = rows.slice(-ROWS);
  const envFile = /source (\S+devnet\.env)/.exec(seen)?.[1];
  expect(envFile).toMatch(/facilitator-devnet-\w+\/devnet\.env$/);
  const sourceRow = screen.findIndex((row) => row.trim() === `source ${envFile}`);
  expect(sourceRow, screen.join("\n")).toBe(screen.length - 1);
  // The commands to try are on the same screen, above it, and the demo ran before them.
  const onScreen = screen.join("\n");
  expect(onScreen).toContain("npx facilitator pay --amount 0.01 | npx facilitator settle -");
  expect(onScreen).toContain("npx facilitator doctor");
  expect(seen.indexOf("settle again")).toBeLessThan(seen.indexOf("Try, in another terminal"));
});
