/**
 * The legacy x402 SDK (`x402-express` and `x402` 1.2.0, x402 protocol v1) as the official package
 * bytes, without its 541-package install (wagmi, the CDP SDK: 682 MB, minutes). `npm pack` fetches
 * the two tarballs from the registry (npm checks them against the registry's integrity, and so do
 * we, against the values pinned here), their `dist/esm` is extracted into a folder of os.tmpdir()
 * kept between runs, and the few modules their ESM build imports when the Express middleware and
 * the v1 client load are linked from this project's node_modules, each a version the package
 * declares it takes (found by reading every `import` of dist/esm the middleware reaches), except
 * two named below. What is left out (wagmi, @coinbase/cdp-sdk, @wallet-standard/*) is imported
 * only by the browser paywall's and the CDP facilitator's code, which these entry points never load.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./devnet-process.js";

const execFileAsync = promisify(execFile);

export const LEGACY_VERSION = "1.2.0";

/** The registry's `dist.integrity` of each tarball (`npm view x402-express@1.2.0 dist.integrity`). */
const INTEGRITY: Record<string, string> = {
  "x402-express":
    "sha512-0AyJIv5vhz4qYbNeEy79J4/uOy44Ze4vI6PjkSMZRA9YuSL8RShKF4N2o+dl/5RNtdz7RkDtXpFNnsYo4Grd/g==",
  x402: "sha512-cqcB9LNw1e1Kv6wkKyyKvn7wcYBnJ9vd8336M9jZRgLKDcIDt2n3liiSXyzx4HJTv07f9M2OAk5uKhh/LcbKQQ==",
};

/**
 * What x402's dist/esm imports from outside itself on the middleware's and the client's path
 * (chunks V3RMM5AE, EJI6X7BV, XXPWMKP6 of 1.2.0), and express for the seller's own app.
 */
const IMPORTED = [
  "viem",
  "zod",
  "@scure/base",
  "@solana/kit",
  "@solana/transaction-confirmation",
  "@solana-program/compute-budget",
  "@solana-program/token",
  "@solana-program/token-2022",
];

/**
 * Declared ^5, ours is 8.4 and nothing here has a 5: only linked (their named exports are all
 * there); an EVM seller never runs their code.
 */
const LINKED_ANYWAY = new Set(["@solana/kit", "@solana/transaction-confirmation"]);

/** Does `version` satisfy the caret range `range` ("^2.21.26", "^0.11.0")? */
function satisfiesCaret(version: string, range: string): boolean {
  if (!range.startsWith("^")) return false;
  const [a = 0, b = 0, c = 0] = (version.split("-")[0] ?? "").split(".").map(Number);
  const [x = 0, y = 0, z = 0] = range.slice(1).split(".").map(Number);
  if (a !== x || (a === 0 && b !== y)) return false;
  return b !== y ? b > y : c >= z;
}

const versionOf = (dir: string) =>
  (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;

/** Every copy of `name` in this project's node_modules: the top one, then those nested one deep. */
function copiesOf(name: string): string[] {
  const top = path.join(ROOT, "node_modules");
  const owners: string[] = [];
  for (const entry of readdirSync(top)) {
    if (entry.startsWith(".")) continue;
    if (entry.startsWith("@")) {
      for (const scoped of readdirSync(path.join(top, entry))) owners.push(`${entry}/${scoped}`);
    } else owners.push(entry);
  }
  return [
    path.join(top, name),
    ...owners.map((owner) => path.join(top, owner, "node_modules", name)),
  ].filter((dir) => existsSync(path.join(dir, "package.json")));
}

/** The copy of `name` to link for a declared `range`, and whether it satisfies it. */
function pick(name: string, range: string): string {
  const copies = copiesOf(name);
  const fitting = copies.find((dir) => satisfiesCaret(versionOf(dir), range));
  if (fitting) return fitting;
  if (LINKED_ANYWAY.has(name) && copies[0]) return copies[0];
  throw new Error(
    `x402@${LEGACY_VERSION} imports ${name} ${range}; node_modules has ${
      copies.map((dir) => versionOf(dir)).join(", ") || "none"
    }`,
  );
}

/** `npm pack` of both packages into `into`; a clear error when the registry cannot be reached. */
async function fetchTarballs(into: string): Promise<Map<string, string>> {
  const specs = Object.keys(INTEGRITY).map((name) => `${name}@${LEGACY_VERSION}`);
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(
      process.platform === "win32" ? "npm.cmd" : "npm",
      ["pack", ...specs, "--json", "--pack-destination", into, "--fetch-retries", "1"],
      { cwd: into, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
    ));
  } catch (error) {
    // npm's code and reason ("code ECONNREFUSED", "FetchError: request to ... failed"), not its stack.
    const detail = ((error as { stderr?: string }).stderr ?? "")
      .split("\n")
      .filter((line) => /^npm error (code |\w*Error|404 )/.test(line))
      .slice(0, 2)
      .join("; ");
    throw new Error(
      `cannot fetch ${specs.join(" and ")} from the npm registry (${detail || String(error)}); ` +
        "this test needs the registry once (the packages are kept in os.tmpdir() after), " +
        "or FACILITATOR_TEST_NO_REGISTRY=1 to leave it out",
    );
  }
  const packed = JSON.parse(stdout) as { name: string; filename: string }[];
  const files = new Map<string, string>();
  for (const { name, filename } of packed) {
    const file = path.join(into, filename);
    if (integrityOf(file) !== INTEGRITY[name]) {
      throw new Error(`${name}@${LEGACY_VERSION} from the registry is not the pinned tarball`);
    }
    files.set(name, file);
  }
  return files;
}

/** The sha512 of `file` as npm writes integrities. */
function integrityOf(file: string): string {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

/**
 * The folder (kept in os.tmpdir(), one per checkout since it links this checkout's modules) whose
 * node_modules holds x402-express and x402 1.2.0 and what they import; a script written there
 * imports them as a seller's does. The first call fetches from the registry (seconds); later runs
 * find the folder and only relink.
 */
export async function legacyX402(): Promise<string> {
  const checkout = createHash("sha256").update(ROOT).digest("hex").slice(0, 8);
  const home = path.join(os.tmpdir(), `facilitator-x402-${LEGACY_VERSION}-${checkout}`);
  const modules = path.join(home, "node_modules");
  const complete = () =>
    Object.keys(INTEGRITY).every((name) => existsSync(path.join(modules, name, "dist")));
  if (!complete()) {
    // Fetched and extracted beside, then renamed into place: a run that stops halfway (or one
    // beside it) never leaves a half folder to be found.
    const partial = mkdtempSync(`${home}.partial-`);
    mkdirSync(path.join(partial, "node_modules"));
    try {
      for (const [name, tarball] of await fetchTarballs(partial)) {
        const dir = path.join(partial, "node_modules", name);
        mkdirSync(dir);
        await execFileAsync("tar", [
          "-xzf",
          tarball,
          "-C",
          dir,
          "--strip-components=1",
          "package/package.json",
          "package/dist/esm",
        ]);
        rmSync(tarball);
      }
      try {
        renameSync(partial, home);
      } catch {
        // A run beside this one put it in place first: keep theirs, which may be in use.
        if (complete()) return legacyX402();
        rmSync(home, { recursive: true, force: true });
        renameSync(partial, home);
      }
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  const declared = (
    JSON.parse(readFileSync(path.join(modules, "x402", "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    }
  ).dependencies;
  const links: [string, string][] = IMPORTED.map((name) => [
    name,
    pick(name, declared[name] ?? ""),
  ]);
  links.push(["express", path.join(ROOT, "node_modules", "express")]);
  for (const [name, target] of links) link(path.join(modules, name), target);
  return home;
}

/** Points `at` to `target`, replacing a link to anything else. */
function link(at: string, target: string) {
  try {
    if (readlinkSync(at) === target) return;
  } catch {
    // Not there yet.
  }
  mkdirSync(path.dirname(at), { recursive: true });
  const fresh = `${at}.${process.pid}`;
  rmSync(fresh, { force: true });
  symlinkSync(target, fresh, "dir");
  renameSync(fresh, at);
}
