/**
 * loadConfig: flags, then environment, then the JSON config file; URL and timeout checks; the
 * settlement key, which no error message may ever echo.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../src/cli/io/errors.js";
import {
  type CliConfig,
  type ConfigFlags,
  loadConfig,
  schemeOptions,
} from "../src/cli/settings/config.js";
import { receiverAuthorizerOf } from "../src/cli/settings/config-keys.js";
import { EVM_SCHEMES } from "../src/evm/schemes.js";
import { svmDevKey } from "../src/svm/devnet/index.js";

// A throwaway key: never funded anywhere, only here to be read and not echoed.
const KEY_HEX = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const KEY = `0x${KEY_HEX}` as const;
const OTHER_KEY = `0x${"ab".repeat(32)}` as const;

let dir: string;
const file = (name: string, content: string): string => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};
const configFile = (name: string, value: unknown): string => file(name, JSON.stringify(value));

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-config-test-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs fn, expects a UsageError, returns its message. */
function usageError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("expected a UsageError, nothing was thrown");
}

/** No run of 8 or more characters of the secret appears in the text. */
function expectNoSecret(text: string, secret: string): void {
  const s = secret.trim().replace(/^0x/i, "").toLowerCase();
  const t = text.toLowerCase();
  for (let i = 0; i + 8 <= s.length; i++) expect(t).not.toContain(s.slice(i, i + 8));
}

describe("RPC URLs", () => {
  it("defaults to none", () => {
    expect(loadConfig({}, {}).rpcUrls).toEqual([]);
  });

  it("takes flags over the environment over the config file", () => {
    const config = configFile("rpc.json", { rpcUrls: ["http://file.example:8545"] });
    const env = { FACILITATOR_RPC_URL: "http://env.example:8545", FACILITATOR_CONFIG: config };
    const flags: ConfigFlags = { rpcUrl: ["http://flag.example:8545"] };
    expect(loadConfig(flags, env).rpcUrls).toEqual(["http://flag.example:8545"]);
    expect(loadConfig({}, env).rpcUrls).toEqual(["http://env.example:8545"]);
    expect(loadConfig({}, { FACILITATOR_CONFIG: config }).rpcUrls).toEqual([
      "http://file.example:8545",
    ]);
    expect(loadConfig({ config }, {}).rpcUrls).toEqual(["http://file.example:8545"]);
  });

  it("treats an empty flag list as no flag", () => {
    const env = { FACILITATOR_RPC_URL: "http://env.example:8545" };
    expect(loadConfig({ rpcUrl: [] }, env).rpcUrls).toEqual(["http://env.example:8545"]);
  });

  it("splits comma-separated values in flags and environment, trimming blanks", () => {
    const flags: ConfigFlags = {
      rpcUrl: ["http://a.example, https://b.example/rpc", "http://c.example:8545"],
    };
    expect(loadConfig(flags, {}).rpcUrls).toEqual([
      "http://a.example",
      "https://b.example/rpc",
      "http://c.example:8545",
    ]);
    const env = { FACILITATOR_RPC_URL: " http://a.example ,,https://b.example/rpc," };
    expect(loadConfig({}, env).rpcUrls).toEqual(["http://a.example", "https://b.example/rpc"]);
  });

  it("rejects something that is not a URL", () => {
    expect(usageError(() => loadConfig({ rpcUrl: ["not a url"] }, {}))).toBe(
      "the URL of --rpc-url is not a valid URL: it contains a space",
    );
    expect(() => loadConfig({}, { FACILITATOR_RPC_URL: "localhost:8545x" })).toThrow(UsageError);
  });

  it("says which URL is invalid and why, never its text (it may hold an API key)", () => {
    const secret = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    const bad = [`https://rpc example.com/v2/${secret}`, `rpc.example.com/v2/${secret}`];
    const flag = usageError(() =>
      loadConfig({ rpcUrl: ["http://ok.example", `https://x.example,${bad[0]}`] }, {}),
    );
    expect(flag).toBe("the 3rd URL of --rpc-url is not a valid URL: it contains a space");
    const env = usageError(() =>
      loadConfig({}, { FACILITATOR_RPC_URL: `https://ok.example,${bad[1]}` }),
    );
    expect(env).toBe(
      "the 2nd URL of FACILITATOR_RPC_URL is not a valid URL: it does not start with a scheme such as https://",
    );
    const config = configFile("bad-url.json", { rpcUrls: [`https://[${secret}]/rpc`] });
    const file = usageError(() => loadConfig({ config }, {}));
    expect(file).toBe(
      `the URL of rpcUrls in ${config} is not a valid URL: it cannot be parsed as a URL`,
    );
    for (const message of [flag, env, file]) expectNoSecret(message, secret);
    const ws = usageError(() => loadConfig({ rpcUrl: [`wss://rpc.example.com/${secret}`] }, {}));
    expect(ws).toBe("the URL of --rpc-url must be http or https, not wss");
  });

  it("rejects schemes other than http and https", () => {
    for (const url of ["ws://127.0.0.1:8545", "ftp://example.com", "file:///tmp/rpc"]) {
      expect(usageError(() => loadConfig({ rpcUrl: [url] }, {}))).toMatch(/http/);
    }
    const config = configFile("ws.json", { rpcUrls: ["wss://example.com"] });
    expect(() => loadConfig({ config }, {})).toThrow(UsageError);
  });

  it("rpcUrls in the config file must be an array of strings, never silently none", () => {
    const notArray = configFile("rpc-string.json", { rpcUrls: "http://a.example" });
    expect(usageError(() => loadConfig({ config: notArray }, {}))).toBe(
      `rpcUrls in ${notArray} must be an array of URLs`,
    );
    const notString = configFile("rpc-number.json", { rpcUrls: ["http://a.example", 8545] });
    expect(usageError(() => loadConfig({ config: notString }, {}))).toBe(
      `the 2nd entry of rpcUrls in ${notString} is not a string`,
    );
  });
});

describe("public RPCs", () => {
  it("are left to the default (used only when no RPC is configured) unless set", () => {
    expect(loadConfig({}, {}).publicRpcs).toBeUndefined();
    expect(loadConfig({ rpcUrl: ["http://a.example"] }, {}).publicRpcs).toBeUndefined();
  });

  it("the flag, then FACILITATOR_PUBLIC_RPCS, then publicRpcs in the config file", () => {
    const on = configFile("public-on.json", { publicRpcs: true });
    const off = configFile("public-off.json", { publicRpcs: false });
    expect(
      loadConfig({ publicRpcs: true, config: off }, { FACILITATOR_PUBLIC_RPCS: "0" }),
    ).toMatchObject({ publicRpcs: true });
    expect(loadConfig({ config: on }, { FACILITATOR_PUBLIC_RPCS: "0" }).publicRpcs).toBe(false);
    for (const value of ["1", "true", "yes", " ON "]) {
      expect(loadConfig({ config: off }, { FACILITATOR_PUBLIC_RPCS: value }).publicRpcs).toBe(true);
    }
    expect(loadConfig({ config: on }, { FACILITATOR_PUBLIC_RPCS: "" }).publicRpcs).toBe(true);
    expect(loadConfig({ config: off }, {}).publicRpcs).toBe(false);
  });

  it("a value that is not a switch is a usage error", () => {
    expect(usageError(() => loadConfig({}, { FACILITATOR_PUBLIC_RPCS: "maybe" }))).toBe(
      "FACILITATOR_PUBLIC_RPCS must be 1 or 0",
    );
    const config = configFile("public-bad.json", { publicRpcs: "yes" });
    expect(usageError(() => loadConfig({ config }, {}))).toBe(
      `publicRpcs in ${config} must be true or false`,
    );
  });
});

describe("confirm timeout", () => {
  it("defaults to 60 s", () => {
    expect(loadConfig({}, {}).confirmTimeoutMs).toBe(60_000);
  });

  it("reads seconds, fractional ones too", () => {
    expect(loadConfig({ confirmTimeout: "30" }, {}).confirmTimeoutMs).toBe(30_000);
    expect(loadConfig({ confirmTimeout: "1.5" }, {}).confirmTimeoutMs).toBe(1_500);
    expect(loadConfig({}, { FACILITATOR_CONFIRM_TIMEOUT: "12" }).confirmTimeoutMs).toBe(12_000);
    const config = configFile("timeout.json", { confirmTimeoutSeconds: 7 });
    expect(loadConfig({ config }, {}).confirmTimeoutMs).toBe(7_000);
  });

  it("takes the flag over the environment over the config file", () => {
    const config = configFile("timeout-all.json", { confirmTimeoutSeconds: 7 });
    const env = { FACILITATOR_CONFIRM_TIMEOUT: "12", FACILITATOR_CONFIG: config };
    expect(loadConfig({ confirmTimeout: "3" }, env).confirmTimeoutMs).toBe(3_000);
    expect(loadConfig({}, env).confirmTimeoutMs).toBe(12_000);
    expect(loadConfig({}, { FACILITATOR_CONFIG: config }).confirmTimeoutMs).toBe(7_000);
  });

  it("rejects zero, negative and non-numeric values", () => {
    for (const value of ["0", "-5", "abc", "", "Infinity"]) {
      const message = usageError(() => loadConfig({ confirmTimeout: value }, {}));
      expect(message).toContain("--confirm-timeout");
    }
    expect(usageError(() => loadConfig({}, { FACILITATOR_CONFIRM_TIMEOUT: "soon" }))).toContain(
      "FACILITATOR_CONFIRM_TIMEOUT",
    );
    const config = configFile("timeout-bad.json", { confirmTimeoutSeconds: "never" });
    expect(usageError(() => loadConfig({ config }, {}))).toContain("confirmTimeoutSeconds");
  });
});

describe("config file", () => {
  it("is optional, and a missing one is a usage error", () => {
    expect(() => loadConfig({}, {})).not.toThrow();
    const missing = path.join(dir, "nope.json");
    expect(usageError(() => loadConfig({ config: missing }, {}))).toContain(missing);
  });

  it("must be a JSON object", () => {
    expect(() => loadConfig({ config: file("array.json", "[1, 2]") }, {})).toThrow(UsageError);
    expect(() => loadConfig({ config: file("broken.json", "{rpcUrls:") }, {})).toThrow(UsageError);
  });

  it("the --config flag wins over FACILITATOR_CONFIG", () => {
    const a = configFile("a.json", { rpcUrls: ["http://a.example"] });
    const b = configFile("b.json", { rpcUrls: ["http://b.example"] });
    expect(loadConfig({ config: a }, { FACILITATOR_CONFIG: b }).rpcUrls).toEqual([
      "http://a.example",
    ]);
  });

  it("does not echo the content of a file that is not JSON (say, the key file by mistake)", () => {
    for (const content of [KEY_HEX, `${KEY}\n`, `{"key": ${KEY_HEX}}`]) {
      const keyAsConfig = file("key-as-config", content);
      const message = usageError(() => loadConfig({ config: keyAsConfig }, {}));
      expectNoSecret(message, KEY_HEX);
    }
  });
});

describe("settlement key", () => {
  it("is undefined when none is configured", () => {
    expect(loadConfig({}, {}).loadPrivateKey()).toBeUndefined();
  });

  it("reads FACILITATOR_PRIVATE_KEY with and without 0x, and trims it", () => {
    expect(loadConfig({}, { FACILITATOR_PRIVATE_KEY: KEY }).loadPrivateKey()).toBe(KEY);
    expect(loadConfig({}, { FACILITATOR_PRIVATE_KEY: KEY_HEX }).loadPrivateKey()).toBe(KEY);
    expect(loadConfig({}, { FACILITATOR_PRIVATE_KEY: ` ${KEY}\n` }).loadPrivateKey()).toBe(KEY);
  });

  it("reads key files, with or without 0x and a trailing newline", () => {
    const withPrefix = file("key-0x", `${KEY}\n`);
    const bare = file("key-bare", KEY_HEX);
    expect(loadConfig({ privateKeyFile: withPrefix }, {}).loadPrivateKey()).toBe(KEY);
    expect(loadConfig({ privateKeyFile: bare }, {}).loadPrivateKey()).toBe(KEY);
    const env = { FACILITATOR_PRIVATE_KEY_FILE: bare };
    expect(loadConfig({}, env).loadPrivateKey()).toBe(KEY);
    const config = configFile("key-config.json", { privateKeyFile: withPrefix });
    expect(loadConfig({ config }, {}).loadPrivateKey()).toBe(KEY);
  });

  it("takes --private-key-file, then FACILITATOR_PRIVATE_KEY, then its _FILE, then the config", () => {
    const flagKey = file("flag.key", KEY);
    const envFileKey = file("env-file.key", `0x${"cd".repeat(32)}`);
    const configKey = file("config.key", `0x${"ef".repeat(32)}`);
    const config = configFile("keys.json", { privateKeyFile: configKey });
    const env = {
      FACILITATOR_PRIVATE_KEY: OTHER_KEY,
      FACILITATOR_PRIVATE_KEY_FILE: envFileKey,
      FACILITATOR_CONFIG: config,
    };
    expect(loadConfig({ privateKeyFile: flagKey }, env).loadPrivateKey()).toBe(KEY);
    expect(loadConfig({}, env).loadPrivateKey()).toBe(OTHER_KEY);
    const { FACILITATOR_PRIVATE_KEY: _, ...withoutKey } = env;
    expect(loadConfig({}, withoutKey).loadPrivateKey()).toBe(`0x${"cd".repeat(32)}`);
    expect(loadConfig({}, { FACILITATOR_CONFIG: config }).loadPrivateKey()).toBe(
      `0x${"ef".repeat(32)}`,
    );
  });

  it("is read only when asked for: a bad key does not break loading the rest", () => {
    const config = loadConfig({}, { FACILITATOR_PRIVATE_KEY: "nonsense" });
    expect(config.rpcUrls).toEqual([]);
    expect(() => config.loadPrivateKey()).toThrow(UsageError);
  });

  it("a malformed key in the environment is refused without echoing it", () => {
    const malformed = [
      KEY_HEX.slice(0, 62), // one byte short
      `${KEY}00`, // one byte long
      `0x${KEY_HEX.slice(0, 63)}g`, // not hex
      `${KEY} ${OTHER_KEY}`, // two keys
      "correct horse battery staple secret words",
    ];
    for (const value of malformed) {
      const message = usageError(() =>
        loadConfig({}, { FACILITATOR_PRIVATE_KEY: value }).loadPrivateKey(),
      );
      expect(message).toContain("FACILITATOR_PRIVATE_KEY");
      expectNoSecret(message, value.replace(/\s+/g, ""));
      expect(message).not.toContain("horse");
    }
  });

  it("a malformed key file is refused without echoing its content", () => {
    const content = `0x${KEY_HEX.slice(0, 60)}zzzz\n`;
    const bad = file("bad.key", content);
    const message = usageError(() => loadConfig({ privateKeyFile: bad }, {}).loadPrivateKey());
    expect(message).toContain("--private-key-file");
    expectNoSecret(message, KEY_HEX.slice(0, 60));
    const viaEnv = usageError(() =>
      loadConfig({}, { FACILITATOR_PRIVATE_KEY_FILE: bad }).loadPrivateKey(),
    );
    expect(viaEnv).toContain("FACILITATOR_PRIVATE_KEY_FILE");
    expectNoSecret(viaEnv, KEY_HEX.slice(0, 60));
  });

  it("an unreadable key file names the source and the reason, not the content", () => {
    const missing = path.join(dir, "missing.key");
    const message = usageError(() => loadConfig({ privateKeyFile: missing }, {}).loadPrivateKey());
    expect(message).toContain("--private-key-file");
    expect(message).toContain("ENOENT");

    // A directory holding a key: reading the "file" fails, and nothing inside leaks.
    const keyDir = path.join(dir, "key-dir");
    mkdirSync(keyDir);
    writeFileSync(path.join(keyDir, "inner.key"), KEY);
    const config = configFile("dir-key.json", { privateKeyFile: keyDir });
    const fromConfig = usageError(() => loadConfig({ config }, {}).loadPrivateKey());
    expect(fromConfig).toContain(`privateKeyFile in ${config}`);
    expect(fromConfig).toContain("EISDIR");
    expectNoSecret(fromConfig, KEY_HEX);
  });
});

describe("settlement safety settings", () => {
  it("a key file with one key per line is a pool; comments and blank lines are skipped", () => {
    const pool = file("pool.keys", `# settlement keys\n${KEY}\n\n${OTHER_KEY}\n`);
    expect(loadConfig({ privateKeyFile: pool }, {}).loadPrivateKeys()).toEqual([KEY, OTHER_KEY]);
    expect(loadConfig({ privateKeyFile: pool }, {}).loadPrivateKey()).toBe(KEY);
    expect(
      loadConfig({}, { FACILITATOR_PRIVATE_KEY: `${KEY},${OTHER_KEY}` }).loadPrivateKeys(),
    ).toEqual([KEY, OTHER_KEY]);
  });

  it("a malformed line names its position, never its content", () => {
    const pool = file("bad-pool.keys", `${KEY}\nnot-a-key-${KEY_HEX.slice(0, 20)}\n`);
    const message = usageError(() => loadConfig({ privateKeyFile: pool }, {}).loadPrivateKeys());
    expect(message).toContain("line 2");
    expect(message).not.toContain(KEY_HEX.slice(0, 8));
  });

  it("the journal: flag, environment, config file, then the XDG state directory", () => {
    const config = configFile("journal.json", { journal: "/from/file.jsonl" });
    expect(
      loadConfig(
        { journal: "/from/flag.jsonl", config },
        { FACILITATOR_JOURNAL: "/from/env.jsonl" },
      ).journalPath,
    ).toBe("/from/flag.jsonl");
    expect(loadConfig({ config }, { FACILITATOR_JOURNAL: "/from/env.jsonl" }).journalPath).toBe(
      "/from/env.jsonl",
    );
    expect(loadConfig({ config }, {}).journalPath).toBe("/from/file.jsonl");
    expect(loadConfig({}, { XDG_STATE_HOME: "/state" }).journalPath).toBe(
      "/state/facilitator/journal.jsonl",
    );
  });

  it("fee caps: global amounts in the native token, per network in the config file", () => {
    expect(loadConfig({ maxFee: "0.002" }, {}).limits.maxFeeWei).toBe(2_000_000_000_000_000n);
    expect(loadConfig({}, { FACILITATOR_MAX_FEE: "1" }).limits.maxFeeWei).toBe(10n ** 18n);
    const config = configFile("fees.json", {
      maxFee: { default: "0.01", base: "0.0005", "eip155:1": "0.02", "84532": "0.1" },
    });
    const loaded = loadConfig({ config }, {}).limits;
    expect(loaded.maxFeeWei).toBe(10n ** 16n);
    expect(loaded.maxFeeWeiByChain).toEqual({
      8453: 5n * 10n ** 14n,
      1: 2n * 10n ** 16n,
      84532: 10n ** 17n,
    });
    expect(loadConfig({}, {}).limits.maxFeeWei).toBeUndefined();
    usageError(() => loadConfig({ maxFee: "-1" }, {}));
    usageError(() => loadConfig({ maxFee: "1e18" }, {}));
    usageError(() =>
      loadConfig({ config: configFile("bad-fees.json", { maxFee: { mars: "1" } }) }, {}),
    );
  });

  it("fee caps per network from the flag and the environment; a single amount replaces the layers below", () => {
    const flag = loadConfig({ maxFee: "eip155:8453=0.002,ethereum=0.05" }, {}).limits;
    expect(flag.maxFeeWei).toBeUndefined();
    expect(flag.maxFeeWeiByChain).toEqual({ 8453: 2n * 10n ** 15n, 1: 5n * 10n ** 16n });
    const config = configFile("fees-layers.json", { maxFee: { default: "0.01", base: "0.0005" } });
    // The environment names one network: the file's other values stay.
    const env = loadConfig({ config }, { FACILITATOR_MAX_FEE: "eip155:1=0.03" }).limits;
    expect(env.maxFeeWei).toBe(10n ** 16n);
    expect(env.maxFeeWeiByChain).toEqual({ 8453: 5n * 10n ** 14n, 1: 3n * 10n ** 16n });
    // A single amount on the flag is for every network: the file's per-network caps give way.
    const all = loadConfig({ config, maxFee: "0.5" }, {}).limits;
    expect(all.maxFeeWei).toBe(5n * 10n ** 17n);
    expect(all.maxFeeWeiByChain).toEqual({});
    usageError(() => loadConfig({ maxFee: "mars=0.1" }, {}));
    usageError(() => loadConfig({ maxFee: "eip155:1=lots" }, {}));
  });

  it("gas bounds, the wasted-gas budget and allowed assets come from the config file", () => {
    const usdc = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
    const config = configFile("limits.json", {
      gasBounds: { eip3009: 150000, "eip155:42161": { eip3009: 900000, permit2: "1200000" } },
      wastedGasBudget: { default: 300000, base: 1000000 },
      allowedAssets: { base: [usdc] },
    });
    const limits = loadConfig({ config }, {}).limits;
    expect(limits.gasBounds).toEqual({
      all: { eip3009: 150_000n },
      byChain: { 42161: { eip3009: 900_000n, permit2: 1_200_000n } },
    });
    expect(limits.wastedGasBudget).toBe(300_000n);
    expect(limits.wastedGasBudgetByChain).toEqual({ 8453: 1_000_000n });
    expect(limits.allowedAssets).toEqual({ 8453: ["0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"] });
    expect(
      loadConfig({ config }, { FACILITATOR_WASTED_GAS_BUDGET: "2000000" }).limits.wastedGasBudget,
    ).toBe(2_000_000n);
    const bad = (values: Record<string, unknown>) => () =>
      loadConfig({ config: configFile("bad-limits.json", values) }, {});
    usageError(bad({ gasBounds: { eip3009: 0 } }));
    usageError(bad({ gasBounds: { eip3010: 100000 } }));
    usageError(bad({ gasBounds: { base: { eip3009: "lots" } } }));
    usageError(bad({ wastedGasBudget: -5 }));
    usageError(bad({ allowedAssets: { base: ["not an address"] } }));
    usageError(bad({ allowedAssets: ["0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"] }));
  });

  it("replace-after: flag, config file, default 15 s", () => {
    expect(loadConfig({ replaceAfter: "2.5" }, {}).replaceAfterMs).toBe(2_500);
    expect(
      loadConfig({ config: configFile("replace.json", { replaceAfterSeconds: 30 }) }, {})
        .replaceAfterMs,
    ).toBe(30_000);
    expect(loadConfig({}, {}).replaceAfterMs).toBe(15_000);
  });
});

describe("what a payment must be worth: --min-amount and --rate-per-payer", () => {
  const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
  const DEVNET_USDC = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";

  it("--min-amount: per network (any name of it, as its CAIP-2 id) or for every network; repeatable, comma-separated", () => {
    const flags = {
      minAmount: [`base:${USDC}=10000`, `solana-devnet:${DEVNET_USDC}=500,${USDC}=7`],
    } as ConfigFlags;
    expect(loadConfig(flags, {}).minAmounts).toEqual([
      { network: "eip155:8453", asset: USDC, units: 10_000n },
      { network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", asset: DEVNET_USDC, units: 500n },
      { network: undefined, asset: USDC, units: 7n },
    ]);
    const env = { FACILITATOR_MIN_AMOUNTS: `eip155:84532:${USDC}=1` };
    expect(loadConfig({}, env).minAmounts).toEqual([
      { network: "eip155:84532", asset: USDC, units: 1n },
    ]);
    const listed = configFile("min-list.json", { minAmounts: [`8453:${USDC}=3`] });
    expect(loadConfig({ config: listed }, {}).minAmounts).toEqual([
      { network: "eip155:8453", asset: USDC, units: 3n },
    ]);
    const mapped = configFile("min-map.json", { minAmounts: { [`base:${USDC}`]: 9, [USDC]: "4" } });
    expect(loadConfig({ config: mapped }, {}).minAmounts).toEqual([
      { network: "eip155:8453", asset: USDC, units: 9n },
      { network: undefined, asset: USDC, units: 4n },
    ]);
    expect(loadConfig({}, {}).minAmounts).toEqual([]);
  });

  it("--min-amount: a usage error naming the entry for a minimum of 0, no minimum, no token or a network that is not one", () => {
    const bad = (entry: string) =>
      usageError(() => loadConfig({ minAmount: [entry] } as ConfigFlags, {}));
    expect(bad(`base:${USDC}=0`)).toMatch(
      /--min-amount: "base:0x8335.*" needs a minimum .* from 1/,
    );
    expect(bad(`base:${USDC}`)).toMatch(/needs a minimum/);
    expect(bad(`base:${USDC}=1.5`)).toMatch(/needs a minimum/);
    expect(bad("base:USDC=100")).toMatch(/does not end in an EVM \(0x…\) or Solana token address/);
    expect(bad(`mars:${USDC}=100`)).toMatch(/"mars" is not a network/);
    expect(bad(`solana:${USDC}=100`)).toMatch(/not a Solana network and a Solana token address/);
    expect(bad(`base:${DEVNET_USDC}=100`)).toMatch(/a Solana token address on an EVM network/);
    usageError(() => loadConfig({ config: configFile("min-bad.json", { minAmounts: 5 }) }, {}));
  });

  it("--rate-per-payer: 60 a minute by default, 0 turns it off, anything else is a usage error", () => {
    expect(loadConfig({}, {}).ratePerPayer).toBe(60);
    expect(loadConfig({ ratePerPayer: "0" } as ConfigFlags, {}).ratePerPayer).toBe(0);
    expect(loadConfig({}, { FACILITATOR_RATE_PER_PAYER: "600" }).ratePerPayer).toBe(600);
    const file = configFile("rate.json", { ratePerPayer: 5 });
    expect(loadConfig({ config: file }, {}).ratePerPayer).toBe(5);
    expect(usageError(() => loadConfig({ ratePerPayer: "lots" } as ConfigFlags, {}))).toMatch(
      /--rate-per-payer must be a whole number from 0 to 1000000/,
    );
  });
});

describe("the batch-settlement receiver authorizer key", () => {
  it("none by default; flag file over environment over config file; one key, never a settlement key, never echoed", () => {
    expect(loadConfig({}, {}).loadReceiverAuthorizerKey()).toBeUndefined();
    const inConfig = configFile("authorizer.json", {
      receiverAuthorizerKeyFile: file("authorizer-in-config.key", `${OTHER_KEY}\n`),
    });
    expect(loadConfig({}, { FACILITATOR_CONFIG: inConfig }).loadReceiverAuthorizerKey()).toBe(
      OTHER_KEY,
    );
    const env = { FACILITATOR_CONFIG: inConfig, FACILITATOR_RECEIVER_AUTHORIZER_KEY: KEY_HEX };
    expect(loadConfig({}, env).loadReceiverAuthorizerKey()).toBe(KEY);
    const flagFile = file("authorizer-flag.key", `# ours\n${OTHER_KEY}\n`);
    expect(
      loadConfig({ receiverAuthorizerKeyFile: flagFile }, env).loadReceiverAuthorizerKey(),
    ).toBe(OTHER_KEY);

    const two = file("authorizer-two.key", `${KEY}\n${OTHER_KEY}\n`);
    const tooMany = usageError(() =>
      loadConfig({ receiverAuthorizerKeyFile: two }, {}).loadReceiverAuthorizerKey(),
    );
    expect(tooMany).toMatch(/holds 2 keys: it takes one/);
    const list = usageError(() =>
      loadConfig(
        {},
        {
          FACILITATOR_RECEIVER_AUTHORIZER_KEY: `${KEY},${OTHER_KEY}`,
        },
      ).loadReceiverAuthorizerKey(),
    );
    expect(list).toMatch(/takes one key, not a list/);
    const bad = usageError(() =>
      loadConfig({}, { FACILITATOR_RECEIVER_AUTHORIZER_KEY: "0x12" }).loadReceiverAuthorizerKey(),
    );
    for (const message of [tooMany, list, bad]) {
      expect(message).not.toContain(KEY_HEX.slice(0, 16));
      expect(message).not.toContain(OTHER_KEY.slice(2, 18));
    }

    const clash = usageError(() => receiverAuthorizerOf(KEY, [OTHER_KEY, KEY]));
    expect(clash).toMatch(/is also a settlement key/);
    expect(clash).not.toContain(KEY_HEX.slice(0, 16));
    expect(receiverAuthorizerOf(KEY, [OTHER_KEY])?.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  });
});

describe("reorg depth and payer throttle", () => {
  it("confirmations: 1 by default; flag over environment over file; a whole number from 1", () => {
    expect(loadConfig({}, {}).confirmations).toBe(1);
    const config = configFile("confirmations.json", { confirmations: 12 });
    expect(loadConfig({}, { FACILITATOR_CONFIG: config }).confirmations).toBe(12);
    const env = { FACILITATOR_CONFIG: config, FACILITATOR_CONFIRMATIONS: "6" };
    expect(loadConfig({}, env).confirmations).toBe(6);
    expect(loadConfig({ confirmations: "3" }, env).confirmations).toBe(3);
    expect(usageError(() => loadConfig({ confirmations: "0" }, {}))).toBe(
      "--confirmations must be a whole number from 1 to 1000",
    );
    expect(usageError(() => loadConfig({ confirmations: "2.5" }, {}))).toMatch(/whole number/);
  });

  it("batch-settlement claim batches: defaults left to the facilitator; flag over environment over file; bounded", () => {
    // The scheme's own rows (src/evm/batch-settlement/settings.ts), made into its options.
    const claims = (config: CliConfig, server = true) =>
      schemeOptions(EVM_SCHEMES, config.schemes, { server }).claimBatch;
    expect(claims(loadConfig({}, {}))).toEqual({ maxRows: undefined, maxWaitMs: undefined });
    const config = configFile("claims.json", { claimBatchRows: 50, claimBatchWaitSeconds: 2 });
    expect(claims(loadConfig({}, { FACILITATOR_CONFIG: config }))).toEqual({
      maxRows: 50,
      maxWaitMs: 2_000,
    });
    // A one-shot command has no other claims to wait for.
    expect(claims(loadConfig({}, { FACILITATOR_CONFIG: config }), false)).toEqual({
      maxRows: 50,
      maxWaitMs: 0,
    });
    const env = { FACILITATOR_CONFIG: config, FACILITATOR_CLAIM_BATCH_ROWS: "20" };
    expect(claims(loadConfig({ claimBatchWait: "0" }, env))).toEqual({
      maxRows: 20,
      maxWaitMs: 0,
    });
    expect(usageError(() => loadConfig({ claimBatchRows: "501" }, {}))).toBe(
      "--claim-batch-rows must be a whole number from 1 to 500",
    );
    expect(usageError(() => loadConfig({ claimBatchWait: "-1" }, {}))).toMatch(/from 0 to 60/);
  });

  it("payerRevertLimit and payerRevertWindowSeconds come from the config file", () => {
    expect(loadConfig({}, {}).payerRevertLimit).toBeUndefined();
    const config = configFile("throttle.json", {
      payerRevertLimit: 5,
      payerRevertWindowSeconds: 30,
    });
    const loaded = loadConfig({ config }, {});
    expect(loaded.payerRevertLimit).toBe(5);
    expect(loaded.payerRevertWindowMs).toBe(30_000);
    const bad = configFile("throttle-bad.json", { payerRevertLimit: "many" });
    expect(usageError(() => loadConfig({ config: bad }, {}))).toMatch(/payerRevertLimit/);
  });
});

describe("config file validation", () => {
  it("an unknown key names the file and the key, and suggests the one meant", () => {
    const config = configFile("typo.json", { rpcUrl: ["http://a.example"] });
    const message = usageError(() => loadConfig({ config }, {}));
    expect(message).toContain(config);
    expect(message).toContain('unknown key "rpcUrl" (did you mean rpcUrls?)');
    const schema = configFile("schema.json", { $schema: "./schema.json", confirmations: 2 });
    expect(loadConfig({ config: schema }, {}).confirmations).toBe(2);
  });

  it("a key of the wrong type names the file and the key", () => {
    const cases: [string, unknown, string][] = [
      ["journal", 42, "journal"],
      ["privateKeyFile", ["a.key"], "privateKeyFile"],
      ["confirmTimeoutSeconds", "soon", "confirmTimeoutSeconds"],
      ["maxFee", "a lot", "maxFee"],
      ["erc6492Factories", 7, "erc6492Factories"],
    ];
    for (const [key, value, named] of cases) {
      const config = configFile(`wrong-${key}.json`, { [key]: value });
      const message = usageError(() => loadConfig({ config }, {}));
      expect(message, key).toContain(`${named} in ${config}`);
    }
  });

  it("relative paths in the file are relative to the file's directory, not the working one", () => {
    const sub = path.join(dir, "conf-dir");
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, "settle.key"), `${KEY}\n`);
    const config = path.join(sub, "facilitator.json");
    writeFileSync(
      config,
      JSON.stringify({ privateKeyFile: "settle.key", journal: "state/j.jsonl" }),
    );
    const loaded = loadConfig({ config }, {});
    expect(loaded.loadPrivateKey()).toBe(KEY);
    expect(loaded.journalPath).toBe(path.join(sub, "state", "j.jsonl"));
  });
});

describe("the Solana fee payer key", () => {
  // The devnet's fee payer: a public test key, derived from a fixed label.
  const svm = svmDevKey("fee-payer");

  it("comes from FACILITATOR_SVM_PRIVATE_KEY, --svm-private-key-file or svmPrivateKeyFile", () => {
    const env = { FACILITATOR_SVM_PRIVATE_KEY: svm.secretKey };
    expect(
      loadConfig({}, env)
        .loadSvmFeePayers()
        .map((k) => k.address),
    ).toEqual([svm.address]);
    const keyFile = file("svm.key", `# fee payer\n${svm.secretKey}\n`);
    expect(
      loadConfig({ svmPrivateKeyFile: keyFile }, {})
        .loadSvmFeePayers()
        .map((k) => k.address),
    ).toEqual([svm.address]);
    const config = configFile("svm.json", { svmPrivateKeyFile: "svm.key" });
    expect(
      loadConfig({ config }, {})
        .loadSvmFeePayers()
        .map((k) => k.address),
    ).toEqual([svm.address]);
    expect(loadConfig({}, {}).loadSvmFeePayers()).toEqual([]);
  });

  it("is never shown: logged or as JSON it is redacted", () => {
    const [key] = loadConfig({}, { FACILITATOR_SVM_PRIVATE_KEY: svm.secretKey }).loadSvmFeePayers();
    expectNoSecret(JSON.stringify(key), Buffer.from(key?.secretKey ?? []).toString("hex"));
    expect(JSON.stringify(key)).not.toContain(svm.secretKey.slice(0, 12));
  });

  it("malformed is a usage error that does not echo it", () => {
    const broken = `${svm.secretKey.slice(0, -3)}abc`;
    for (const text of [broken, "zz0OIl-not-a-key", KEY_HEX]) {
      const message = usageError(() =>
        loadConfig({}, { FACILITATOR_SVM_PRIVATE_KEY: text }).loadSvmFeePayers(),
      );
      expect(message).toContain("FACILITATOR_SVM_PRIVATE_KEY");
      expect(message).toContain("base58 64-byte secret key");
      expectNoSecret(message, text);
    }
    const keyFile = file("bad-svm.key", `${broken}\n`);
    const message = usageError(() =>
      loadConfig({ svmPrivateKeyFile: keyFile }, {}).loadSvmFeePayers(),
    );
    expect(message).toContain("--svm-private-key-file");
    expectNoSecret(message, broken);
  });
});

describe("one rule for every setting (settings.ts, setting-resolver.ts)", () => {
  it("an environment variable holding only blanks is unset: the config file's value applies", () => {
    const config = configFile("blank-env.json", {
      rpcUrls: ["http://file.example"],
      confirmTimeoutSeconds: 7,
      journal: "/from/file.jsonl",
      store: "postgres://file@localhost/db",
    });
    const loaded = loadConfig(
      { config },
      {
        FACILITATOR_RPC_URL: "  ",
        FACILITATOR_CONFIRM_TIMEOUT: " ",
        FACILITATOR_JOURNAL: "",
        FACILITATOR_STORE: "\t",
        FACILITATOR_PRIVATE_KEY: " ",
      },
    );
    expect(loaded.rpcUrls).toEqual(["http://file.example"]);
    expect(loaded.confirmTimeoutMs).toBe(7_000);
    expect(loaded.journalPath).toBe("/from/file.jsonl");
    expect(loaded.storeUrl).toBe("postgres://file@localhost/db");
    expect(loaded.loadPrivateKey()).toBeUndefined();
  });

  it("an environment variable is read without the blanks around it", () => {
    const keyFile = file("trimmed.key", `${KEY}\n`);
    const env = {
      FACILITATOR_JOURNAL: " /from/env.jsonl\n",
      FACILITATOR_PRIVATE_KEY_FILE: ` ${keyFile} `,
      FACILITATOR_STORE: " postgres://env@localhost/db ",
    };
    const loaded = loadConfig({}, env);
    expect(loaded.journalPath).toBe("/from/env.jsonl");
    expect(loaded.storeUrl).toBe("postgres://env@localhost/db");
    expect(loaded.loadPrivateKey()).toBe(KEY);
  });

  it("a flag given empty is given: it is read, and refused when empty is no value", () => {
    const env = { FACILITATOR_CLAIM_BATCH_ROWS: "20" };
    expect(usageError(() => loadConfig({ claimBatchRows: "" }, env))).toBe(
      "--claim-batch-rows must be a whole number from 1 to 500",
    );
    expect(usageError(() => loadConfig({ claimBatchWait: "" }, {}))).toMatch(/from 0 to 60/);
    const keyEnv = { FACILITATOR_PRIVATE_KEY: KEY };
    const message = usageError(() => loadConfig({ privateKeyFile: "" }, keyEnv).loadPrivateKey());
    expect(message).toContain("--private-key-file");
    expectNoSecret(message, KEY_HEX);
    // A store flag given empty still means the journal file, over the environment's store.
    const store = { FACILITATOR_STORE: "postgres://env@localhost/db" };
    expect(loadConfig({ store: "" }, store).storeUrl).toBeUndefined();
  });
});
