/** How the keys the CLI signs with are read: only when needed, and never quoted in a message. */
import { type Hex, isAddressEqual, type LocalAccount } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type SvmFeePayer, svmFeePayerOf } from "../../svm/chain/keys.js";
import { readSmallFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import { type KeyReader, keyLoader, type SettingSources } from "./setting-resolver.js";
import { SETTINGS } from "./settings.js";

export function readPrivateKey(text: string, source: string): Hex {
  const key = text.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(key)) {
    throw new UsageError(`the private key from ${source} is not 32 bytes of hex`);
  }
  return (key.startsWith("0x") ? key : `0x${key}`) as Hex;
}

/** A key file's lines that are neither blank nor a # comment, trimmed. */
export const keyLines = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));

/** Keys comma-separated in the environment; in a file one a line, blank and # lines skipped. */
function keyList<K>(read: (text: string, source: string) => K, what: string): KeyReader<K> {
  const each = (items: string[], source: string, at: (i: number) => string) =>
    items.map((item, i) => read(item, items.length > 1 ? `${source}${at(i)}` : source));
  return {
    inline: (text, source) => each(text.split(","), source, (i) => ` (key ${i + 1})`),
    inFile: (path, source, env) => {
      const lines = keyLines(readSmallFile(path, `the ${what} file from ${source}`, env));
      if (lines.length === 0) throw new UsageError(`the ${what} file from ${source} holds no key`);
      return each(lines, source, (i) => `, line ${i + 1}`);
    },
  };
}

/** A Solana secret key in base58 (64 bytes), never echoed when it is not one. */
function readSvmKey(text: string, source: string): SvmFeePayer {
  const key = svmFeePayerOf(text);
  if (!key) {
    throw new UsageError(
      `the Solana key from ${source} is not a base58 64-byte secret key (seed and public key)`,
    );
  }
  return key;
}

/** The receiver authorizer, refused if also a settlement key: it would spend the lanes' nonces. */
export function receiverAuthorizerOf(
  key: Hex | undefined,
  settlementKeys: readonly Hex[],
): LocalAccount | undefined {
  if (key === undefined) return undefined;
  const account = privateKeyToAccount(key);
  const clash = settlementKeys.some((k) =>
    isAddressEqual(privateKeyToAccount(k).address, account.address),
  );
  if (clash) {
    throw new UsageError(
      `the receiver authorizer ${account.address} is also a settlement key: the authorizer only signs (claims and refunds) and must not also spend gas and nonces; give it a key of its own`,
    );
  }
  return account;
}

const EVM_KEYS = keyList(readPrivateKey, "private key");
const SVM_KEYS = keyList(readSvmKey, "Solana key");

/** The receiver authorizer's one key. */
const ONE_EVM_KEY: KeyReader<Hex> = {
  inline: (text, source) => {
    if (text.includes(",")) throw new UsageError(`${source} takes one key, not a list`);
    return [readPrivateKey(text, source)];
  },
  inFile: (file, source, env) => {
    const keys = EVM_KEYS.inFile(file, source, env);
    if (keys.length > 1) {
      throw new UsageError(
        `the receiver authorizer key file from ${source} holds ${keys.length} keys: it takes one`,
      );
    }
    return keys;
  },
};

/** serve's API key: the whole file (trimmed), or the variable's text. */
const API_KEY: KeyReader<string> = {
  inline: (text) => [text.trim()],
  inFile: (file, source, env) => {
    const key = readSmallFile(file, source, env).trim();
    if (!key) throw new UsageError(`${source} is empty`);
    return [key];
  },
};

/** The key loaders: the config file's paths checked now, the keys read only when called. */
export function keyLoaders(sources: SettingSources) {
  const loadPrivateKeys = keyLoader(SETTINGS.privateKeys, sources, EVM_KEYS);
  const loadPrivateKey = (): Hex | undefined => loadPrivateKeys()[0];
  const authorizer = keyLoader(SETTINGS.receiverAuthorizerKey, sources, ONE_EVM_KEY);
  const loadReceiverAuthorizerKey = (): Hex | undefined => authorizer()[0];
  const loadSvmFeePayers = keyLoader(SETTINGS.svmFeePayers, sources, SVM_KEYS);
  return { loadPrivateKey, loadPrivateKeys, loadReceiverAuthorizerKey, loadSvmFeePayers };
}

/** What a key loader gives, or none when it throws: a bad key is another step's to report. */
export function keysOrNone<K>(load: () => K[]): K[] {
  try {
    return load();
  } catch {
    return [];
  }
}

/** serve's API key (--api-key-file, or the key itself in the environment), if any. */
export function loadApiKey(sources: SettingSources): string | undefined {
  return keyLoader(SETTINGS.apiKey, sources, API_KEY)()[0];
}
