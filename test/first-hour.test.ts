/**
 * A newcomer's first hour against `facilitator devnet` (issue 28), as typed into a shell with the
 * devnet's devnet.env sourced: verify after settle names our own key.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevnetProcess, shell, spawnDevnet, stop, waitFor } from "./helpers/devnet-process.js";

let devnet: DevnetProcess;
let banner: string;
/** The devnet's directory, devnet.env and settlement key (which no output may show). */
let dir: string;
let envFile: string;
let key: string;

beforeAll(async () => {
  devnet = spawnDevnet(["--port", "0"]);
  await waitFor(devnet, "devnet.env");
  banner = await waitFor(devnet, "npx facilitator doctor");
  envFile = /source (\S+devnet\.env)/.exec(banner)?.[1] ?? "";
  dir = path.dirname(envFile);
  key = (await readFile(path.join(dir, "facilitator.key"), "utf8")).trim().replace(/^0x/, "");
});

afterAll(() => stop(devnet));

function expectNoKey(...texts: string[]): void {
  for (const text of texts)
    expect(text.toLowerCase()).not.toContain(key.slice(0, 24).toLowerCase());
}

describe("the first hour on a devnet", () => {
  it("verify after settle calls the settling key ours, as serve's /verify does", async () => {
    // A fresh EIP-3009 request of payer 5, so no other test here settles it first.
    const signed = await shell([envFile], "facilitator pay --payer 5 --amount 0.02");
    expect(signed.code).toBe(0);
    const file = path.join(dir, "first-hour-request.json");
    await writeFile(file, signed.stdout);
    const run = await shell([envFile], `facilitator settle ${file} && facilitator verify ${file}`);
    expect(run.code).toBe(1);
    const answers = run.stdout.split(/\n(?=\{)/).map((text) => JSON.parse(text));
    expect(answers[0]).toMatchObject({ success: true });
    expect(answers[1]).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(answers[1].message).toContain(
      "sent by 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266 (a settlement key of this facilitator): the payer did pay",
    );
    expect(answers[1].message).not.toContain("not by this facilitator");
    expectNoKey(run.stdout, run.stderr);
  });
});
