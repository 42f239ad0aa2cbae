/** Who pays with `pay`: a devnet payer by number, or the key in --payer-key-file. */
import { type Address, getAddress, isAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type DevAccount, payerAccounts } from "../../../evm/devnet/accounts.js";
import { readSmallFile } from "../../io/bounded-read.js";
import { UsageError } from "../../io/errors.js";
import { keyLines, readPrivateKey } from "../../settings/config-keys.js";
import type { PayFlags } from "./pay-flags.js";

export function address(value: string, flag: string): Address {
  if (!isAddress(value, { strict: false })) throw new UsageError(`${flag} is not an address`);
  return getAddress(value);
}

/** The flag's address, else the requirements' `field`, each checked by `parse`; else undefined. */
export function addressGiven<A>(
  parse: (value: string, named: string) => A,
  [flag, value]: [string, string | undefined],
  [field, fromFile]: [string, string | undefined],
): A | undefined {
  if (value !== undefined) return parse(value, flag);
  return fromFile === undefined ? undefined : parse(fromFile, `the requirements' ${field}`);
}

/** Who pays: --payer-key-file's key (read by `parse`), else the devnet payer --payer numbers. */
export function payerOf<P>(
  flags: PayFlags,
  parse: (text: string) => P,
  devnet: { readonly payers: readonly P[]; readonly range: string } | undefined,
  [notDevnet, noKey]: readonly [string, string],
): P {
  if (flags.payerKeyFile !== undefined) {
    if (flags.payer !== undefined) {
      throw new UsageError("--payer and --payer-key-file exclude each other");
    }
    return parse(readSmallFile(flags.payerKeyFile, "--payer-key-file", process.env));
  }
  if (!devnet) throw new UsageError(flags.payer !== undefined ? notDevnet : noKey);
  const n = Number(flags.payer ?? "1");
  const payer = Number.isInteger(n) ? devnet.payers[n - 1] : undefined;
  if (!payer) throw new UsageError(`--payer must be 1 to ${devnet.range}`);
  return payer;
}

export function payerFrom(flags: PayFlags, devnet: boolean): DevAccount {
  const parse = (text: string) => {
    const privateKey = readPrivateKey(keyLines(text)[0] ?? "", "--payer-key-file");
    return { address: privateKeyToAccount(privateKey).address, privateKey };
  };
  const payers = devnet ? { payers: payerAccounts, range: `${payerAccounts.length}` } : undefined;
  return payerOf(flags, parse, payers, [
    "--payer picks a devnet payer, and this RPC's chain is no devnet: use --payer-key-file FILE",
    "who pays? pass --payer-key-file FILE (the payer's key; never a flag value)",
  ]);
}
