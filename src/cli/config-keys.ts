/**
 * The keys the CLI signs with: settlement keys, the batch-settlement receiver authorizer's key
 * and Solana fee payers. Each comes from a file or the environment, never from a flag's value; a
 * loader reads it only when a command needs it, and no message ever quotes a key.
 */
import { type Hex, isAddressEqual, type LocalAccount } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type SvmFeePayer, svmFeePayerOf } from "../svm/chain/keys.js";
import { readSmallFile } from "./bounded-read.js";
import { filePath, type LoadedFile } from "./config-file.js";
import { UsageError } from "./errors.js";

/** The flags that name key files. */
export interface KeyFlags {
  readonly privateKeyFile?: string | undefined;
  readonly receiverAuthorizerKeyFile?: string | undefined;
  readonly svmPrivateKeyFile?: string | undefined;
}

export function readPrivateKey(text: string, source: string): Hex {
  const key = text.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(key)) {
    throw new UsageError(`the private key from ${source} is not 32 bytes of hex`);
  }
  return (key.startsWith("0x") ? key : `0x${key}`) as Hex;
}

/** One key per line; blank lines and lines starting with # are skipped. */
function readKeyFile(path: string, source: string, env: NodeJS.ProcessEnv): Hex[] {
  const text = readSmallFile(path, `the private key file from ${source}`, env);
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  if (lines.length === 0) throw new UsageError(`the private key file from ${source} holds no key`);
  return lines.map((line, i) =>
    readPrivateKey(line, lines.length > 1 ? `${source}, line ${i + 1}` : source),
  );
}

/** A Solana secret key in base58 (64 bytes), never echoed when it is not one. */
export function readSvmKey(text: string, source: string): SvmFeePayer {
  const key = svmFeePayerOf(text);
  if (!key) {
    throw new UsageError(
      `the Solana key from ${source} is not a base58 64-byte secret key (seed and public key)`,
    );
  }
  return key;
}

/** One Solana key per line; blank lines and lines starting with # are skipped. */
function readSvmKeyFile(path: string, source: string, env: NodeJS.ProcessEnv): SvmFeePayer[] {
  const text = readSmallFile(path, `the Solana key file from ${source}`, env);
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  if (lines.length === 0) throw new UsageError(`the Solana key file from ${source} holds no key`);
  return lines.map((line, i) =>
    readSvmKey(line, lines.length > 1 ? `${source}, line ${i + 1}` : source),
  );
}

/**
 * The receiver authorizer's account, refused when its key is also a settlement key: it signs
 * claims and refunds, and a key that also sends transactions would spend gas and nonces the
 * settlement lanes count on. The message names addresses only, never a key.
 */
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

/** The key loaders: the config file's paths checked now, the keys read only when called. */
export function keyLoaders(flags: KeyFlags, env: NodeJS.ProcessEnv, loaded: LoadedFile) {
  const file = loaded.values;
  const where = loaded.where;
  const keyFileInConfig = filePath(file.privateKeyFile, "privateKeyFile", loaded);
  const loadPrivateKeys = (): Hex[] => {
    if (flags.privateKeyFile) return readKeyFile(flags.privateKeyFile, "--private-key-file", env);
    if (env.FACILITATOR_PRIVATE_KEY) {
      return env.FACILITATOR_PRIVATE_KEY.split(",").map((key, i, all) =>
        readPrivateKey(
          key,
          all.length > 1 ? `FACILITATOR_PRIVATE_KEY (key ${i + 1})` : "FACILITATOR_PRIVATE_KEY",
        ),
      );
    }
    if (env.FACILITATOR_PRIVATE_KEY_FILE) {
      return readKeyFile(env.FACILITATOR_PRIVATE_KEY_FILE, "FACILITATOR_PRIVATE_KEY_FILE", env);
    }
    if (keyFileInConfig !== undefined) {
      return readKeyFile(keyFileInConfig, where("privateKeyFile"), env);
    }
    return [];
  };
  const loadPrivateKey = (): Hex | undefined => loadPrivateKeys()[0];

  const authorizerFileInConfig = filePath(
    file.receiverAuthorizerKeyFile,
    "receiverAuthorizerKeyFile",
    loaded,
  );
  const loadReceiverAuthorizerKey = (): Hex | undefined => {
    const one = (keys: Hex[], source: string): Hex => {
      if (keys.length > 1) {
        throw new UsageError(
          `the receiver authorizer key file from ${source} holds ${keys.length} keys: it takes one`,
        );
      }
      return keys[0] as Hex;
    };
    if (flags.receiverAuthorizerKeyFile) {
      const source = "--receiver-authorizer-key-file";
      return one(readKeyFile(flags.receiverAuthorizerKeyFile, source, env), source);
    }
    const fromEnv = env.FACILITATOR_RECEIVER_AUTHORIZER_KEY;
    if (fromEnv?.trim()) {
      if (fromEnv.includes(",")) {
        throw new UsageError("FACILITATOR_RECEIVER_AUTHORIZER_KEY takes one key, not a list");
      }
      return readPrivateKey(fromEnv, "FACILITATOR_RECEIVER_AUTHORIZER_KEY");
    }
    if (env.FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE) {
      const source = "FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE";
      return one(readKeyFile(env.FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE, source, env), source);
    }
    if (authorizerFileInConfig !== undefined) {
      const source = where("receiverAuthorizerKeyFile");
      return one(readKeyFile(authorizerFileInConfig, source, env), source);
    }
    return undefined;
  };

  const svmKeyFileInConfig = filePath(file.svmPrivateKeyFile, "svmPrivateKeyFile", loaded);
  const loadSvmFeePayers = (): SvmFeePayer[] => {
    if (flags.svmPrivateKeyFile) {
      return readSvmKeyFile(flags.svmPrivateKeyFile, "--svm-private-key-file", env);
    }
    if (env.FACILITATOR_SVM_PRIVATE_KEY) {
      return env.FACILITATOR_SVM_PRIVATE_KEY.split(",").map((key, i, all) =>
        readSvmKey(
          key,
          all.length > 1
            ? `FACILITATOR_SVM_PRIVATE_KEY (key ${i + 1})`
            : "FACILITATOR_SVM_PRIVATE_KEY",
        ),
      );
    }
    if (env.FACILITATOR_SVM_PRIVATE_KEY_FILE) {
      return readSvmKeyFile(
        env.FACILITATOR_SVM_PRIVATE_KEY_FILE,
        "FACILITATOR_SVM_PRIVATE_KEY_FILE",
        env,
      );
    }
    if (svmKeyFileInConfig !== undefined) {
      return readSvmKeyFile(svmKeyFileInConfig, where("svmPrivateKeyFile"), env);
    }
    return [];
  };

  return { loadPrivateKey, loadPrivateKeys, loadReceiverAuthorizerKey, loadSvmFeePayers };
}
