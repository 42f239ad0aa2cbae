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
  const address = await derive(owner, mint, tokenProgram);
  setNewest(known, key, address, KEPT);
  return address;
}

async function derive(
  owner: string,
  mint: string,
  tokenProgram: string,
): Promise<string | undefined> {
  try {
    const [address] = await getProgramDerivedAddress({
      programAddress: ASSOCIATED_TOKEN_PROGRAM as Address,
      seeds: [
        addressEncoder.encode(owner as Address),
        addressEncoder.encode(tokenProgram as Address),
        addressEncoder.encode(mint as Address),
      ],
    });
    return address;
  } catch {
    return undefined;
  }
}
