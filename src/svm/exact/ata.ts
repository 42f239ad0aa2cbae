/** The associated token account: the PDA of [owner, token program, mint] under the ATA program. */
import { type Address, getAddressEncoder, getProgramDerivedAddress } from "@solana/kit";
import { setNewest } from "../../core/newest.js";
import { ASSOCIATED_TOKEN_PROGRAM } from "./constants.js";

const addressEncoder = getAddressEncoder();

/** Derived addresses kept (a merchant's repeat in every payment); the oldest go past this many. */
const KEPT = 10_000;
const known = new Map<string, string | undefined>();

/** The ATA's address, or undefined when owner or mint is not a valid address. */
export async function associatedTokenAddress(
  owner: string,
  mint: string,
  tokenProgram: string,
): Promise<string | undefined> {
  const key = `${owner} ${mint} ${tokenProgram}`;
  if (known.has(key)) return known.get(key);
  let address: string | undefined;
  try {
    const seeds = [owner, tokenProgram, mint].map((part) => addressEncoder.encode(part as Address));
    [address] = await getProgramDerivedAddress({
      programAddress: ASSOCIATED_TOKEN_PROGRAM as Address,
      seeds,
    });
  } catch {
    // Not an address: no account, remembered as such.
  }
  setNewest(known, key, address, KEPT);
  return address;
}
