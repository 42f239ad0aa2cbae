/**
 * The associated token account of an owner for a mint: the program-derived address of
 * [owner, token program, mint] under the Associated Token Account program.
 */
import { type Address, getAddressEncoder, getProgramDerivedAddress } from "@solana/kit";
import { ASSOCIATED_TOKEN_PROGRAM } from "./constants.js";

const addressEncoder = getAddressEncoder();

/** The ATA's address, or undefined when owner or mint is not a valid address. */
export async function associatedTokenAddress(
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
