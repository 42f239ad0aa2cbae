/**
 * A scheme's settings are its own: test/schemes/memo/ declares a setting (--memo-prefix,
 * FACILITATOR_MEMO_PREFIX, memoPrefix in the config file) in its registration, and nothing else
 * changes for it. The CLI's config reads it from each of the three, the flag first, refuses a bad
 * value as a usage error naming where it came from, and the family hands the scheme what it
 * resolved: the memo written on a real anvil devnet starts with the configured prefix.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Hex, hexToString } from "viem";
import { afterAll, beforeAll, expect, test } from "vitest";
import { UsageError } from "../src/cli/io/errors.js";
import { type ConfigFlags, loadConfig, schemeOptions } from "../src/cli/settings/config.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { EVM_SCHEMES } from "../src/evm/schemes.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn, handlePost } from "./helpers/facilitator.js";
import { requirementsV2 } from "./helpers/x402.js";
import { MEMO, memoScheme } from "./schemes/memo/index.js";

const schemes = [...EVM_SCHEMES, memoScheme];
let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "scheme-settings-"));
  devnet = await startDevnet();
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function configFile(values: object): string {
  const file = path.join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(values));
  return file;
}

/** The memo written on chain by a facilitator made from these flags and environment. */
async function written(flags: ConfigFlags, env: NodeJS.ProcessEnv, memo: string) {
  const config = loadConfig(flags, env, schemes);
  const facilitator = facilitatorOn(devnet, {
    schemes,
    ...schemeOptions(schemes, config.schemes, { server: false }),
  });
  const requirements = { ...requirementsV2(devnet), scheme: MEMO };
  const answered = await handlePost(facilitator, "/settle", {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url: "http://localhost/memo" },
      accepted: requirements,
      payload: { memo },
    },
    paymentRequirements: requirements,
  });
  expect(answered.body, JSON.stringify(answered.body)).toMatchObject({ success: true });
  const sent = await chainOf(devnet).getTransaction({ hash: answered.body.transaction as Hex });
  return hexToString(sent.input);
}

test("a test scheme's own setting, from its flag, its environment variable or its config key, reaches its transactions", async () => {
  expect(await written({}, {}, "no prefix")).toBe("no prefix");
  expect(await written({ memoPrefix: "flag/" }, {}, "one")).toBe("flag/one");
  expect(await written({}, { FACILITATOR_MEMO_PREFIX: "env/" }, "two")).toBe("env/two");
  const file = configFile({ memoPrefix: "file/" });
  expect(await written({}, { FACILITATOR_CONFIG: file }, "three")).toBe("file/three");
  // The flag over the environment over the config file, as every setting.
  const all = { FACILITATOR_CONFIG: file, FACILITATOR_MEMO_PREFIX: "env/" };
  expect(await written({ memoPrefix: "flag/" }, all, "four")).toBe("flag/four");
  expect(await written({}, all, "five")).toBe("env/five");
}, 60_000);

test("a bad value of a scheme's setting is a usage error naming its source; its key is known to the config file", () => {
  const refusal = (flags: ConfigFlags, env: NodeJS.ProcessEnv) => {
    try {
      loadConfig(flags, env, schemes);
    } catch (error) {
      expect(error).toBeInstanceOf(UsageError);
      return (error as Error).message;
    }
    throw new Error("expected a UsageError");
  };
  expect(refusal({ memoPrefix: "x".repeat(17) }, {})).toBe(
    "--memo-prefix must be 1 to 16 printable characters",
  );
  const file = configFile({ memoPrefix: 7 });
  expect(refusal({}, { FACILITATOR_CONFIG: file })).toBe(
    `memoPrefix in ${file} must be 1 to 16 printable characters`,
  );
  // Without the scheme registered, its key is not one of the config file's.
  expect(() => loadConfig({}, { FACILITATOR_CONFIG: configFile({ memoPrefix: "a" }) })).toThrow(
    /unknown key "memoPrefix"/,
  );
});
