/** Who pays with `pay`: a devnet payer by number, or the key in --payer-key-file. */
import { type Address, getAddress, isAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type DevAccount, payerAccounts } from "../../../evm/devnet/accounts.js";
import { readSmallFile } from "../../io/bounded-read.js";
import { UsageError } from "../../io/errors.js";
import { readPrivateKey } from "../../settings/config-keys.js";
import type { PayFlags } from "./pay-flags.js";

export function address(value: string, flag: string): Address {
  if (!isAddress(value, { strict: false })) throw new UsageError(`${flag} is not an address`);
  return getAddress(value);
}

export function payerFrom(flags: PayFlags, devnet: boolean): DevAccount {
  if (flags.payerKeyFile !== undefined) {
    if (flags.payer !== undefined)
      throw new UsageError("--payer and --payer-key-file exclude each other");
    const text = readSmallFile(flags.payerKeyFile, "--payer-key-file", process.env);
    const line = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l && !l.startsWith("#"));
    const privateKey = readPrivateKey(line ?? "", "--payer-key-file");
    return { address: privateKeyToAccount(privateKey).address, privateKey };
  }
  if (!devnet) {
    throw new UsageError(
      flags.payer !== undefined
        ? "--payer picks a devnet payer, and this RPC's chain is no devnet: use --payer-key-file FILE"
        : "who pays? pass --payer-key-file FILE (the payer's key; never a flag value)",
    );
  }
  const n = Number(flags.payer ?? "1");
  const payer = Number.isInteger(n) ? payerAccounts[n - 1] : undefined;
  if (!payer) throw new UsageError(`--payer must be 1 to ${payerAccounts.length}`);
  return payer;
}
