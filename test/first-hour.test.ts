/**
 * A newcomer's first hour against `facilitator devnet` (issue 28), as typed into a shell with the
 * devnet's devnet.env sourced: verify after settle names our own key, a failed `pay` piped into
 * `settle -` gives no second error, the banner's "Try" list and the README's curl agree, and
 * serve's request log names the payer of a reference-dialect /settle.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DevnetProcess,
  ROOT,
  shell,
  sourcedEnv,
  spawnCommand,
  spawnDevnet,
  stop,
  waitFor,
} from "./helpers/devnet-process.js";

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

  it.each([
    ["with devnet.env", true],
    ["in a shell without devnet.env", false],
  ])(
    "a failed pay piped into settle - is one line, not a second error (%s)",
    async (_, sourced) => {
      const run = await shell(
        sourced ? [envFile] : [],
        "facilitator pay --amount abc | facilitator settle -",
        { pipestatus: true },
      );
      // pay's own line (without devnet.env it asks which chain first), then settle's one line.
      const [paySaid, ...rest] = run.stderr.trimEnd().split("\n");
      expect(paySaid).toBe(
        sourced
          ? "facilitator: --amount must be an amount in token units, such as 0.01"
          : "facilitator: which chain? no reachable RPC is configured: pass --network, and --rpc-url (or source a devnet's devnet.env)",
      );
      expect(rest).toEqual([
        "facilitator: stdin holds a failure answer (invalid_request), not a request: did the command before the pipe fail?",
        "PIPESTATUS 2 2",
      ]);
      // The pipeline's one JSON document is pay's own failure, passed on unchanged.
      expect(JSON.parse(run.stdout)).toEqual({
        success: false,
        error: "invalid_request",
        message: paySaid?.replace(/^facilitator: /, ""),
      });
      expect(run.stdout).not.toContain("payload must be an object");
    },
  );

  it("an empty pipe into settle - says nothing came, in one line", async () => {
    const run = await shell([envFile], "false | facilitator settle -", { pipestatus: true });
    expect(run.stderr.trimEnd().split("\n")).toEqual([
      "facilitator: nothing on stdin: did the command before the pipe fail?",
      "PIPESTATUS 1 2",
    ]);
    expect(JSON.parse(run.stdout)).toEqual({
      success: false,
      error: "invalid_request",
      message: "nothing on stdin: did the command before the pipe fail?",
    });
  });

  it("the README's curl answers as it shows after the banner's Try list has run", async () => {
    // Every command of the banner's Try list, as listed (the source line comes first in use).
    const tryBlock = banner.slice(banner.indexOf("  Try, in another terminal"));
    const commands = tryBlock
      .split("\n")
      .filter((line) => line.startsWith("    npx facilitator"))
      .map((line) => line.trim().replace(/\s+# .*$/, ""));
    expect(commands.length).toBeGreaterThanOrEqual(4);
    for (const command of commands) {
      const run = await shell([envFile], command);
      expect([0, 1], `${command}: ${run.stderr}`).toContain(run.code);
    }

    const readme = await readFile(path.join(ROOT, "README.md"), "utf8");
    const curl = /^curl -s localhost:4020(\/verify) .*-d @(\S+)$/m.exec(readme);
    if (!curl?.[1] || !curl[2]) throw new Error("no curl /verify line in the README");
    const shown = readme.slice(curl.index).split("```\n{")[1]?.split("\n")[0];
    const serve = spawnCommand(["serve", "--port", "0"], await sourcedEnv(envFile));
    try {
      const url = JSON.parse(
        (await waitFor(serve, '"event":"listening"', { stream: "stderr" })).split("\n")[0] ?? "",
      ).url as string;
      const body = await readFile(curl[2].replace("/tmp/facilitator-devnet-XXXX", dir), "utf8");
      const response = await fetch(`${url}${curl[1]}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(JSON.parse(`{${shown}`));
    } finally {
      await stop(serve);
    }
  });

  it("serve's request log names the payer of a reference-dialect /settle", async () => {
    const signed = await shell([envFile], "facilitator pay --payer 4 --amount 0.01");
    const payer = JSON.parse(signed.stdout).payload.payload.authorization.from as string;
    const serve = spawnCommand(["serve", "--port", "0"], await sourcedEnv(envFile));
    try {
      const url = JSON.parse(
        (await waitFor(serve, '"event":"listening"', { stream: "stderr" })).split("\n")[0] ?? "",
      ).url as string;
      const response = await fetch(`${url}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: signed.stdout,
      });
      expect(await response.json()).toMatchObject({ success: true });
      const logged = await waitFor(serve, '"path":"/settle"', { stream: "stderr" });
      const line = logged.split("\n").find((l) => l.includes('"path":"/settle"')) ?? "";
      expect(JSON.parse(line)).toMatchObject({ path: "/settle", status: 200, payer });
      expectNoKey(serve.stderr());
    } finally {
      await stop(serve);
    }
  });
});

describe("the docs' two-terminal steps", () => {
  it("no code block runs serve and the curl that needs it in one terminal", async () => {
    for (const doc of ["README.md", "docs/serve.md"]) {
      const text = await readFile(path.join(ROOT, doc), "utf8");
      const blocks = text.split("```").filter((_, i) => i % 2 === 1);
      const both = blocks.filter((b) => b.includes("facilitator serve") && b.includes("curl "));
      expect(both, doc).toEqual([]);
    }
  });
});
