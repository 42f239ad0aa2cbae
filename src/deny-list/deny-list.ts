/** The operator's deny list: listed payers and payees refused before any chain call, never why. */
import { base58ToBytes } from "../protocol/base58.js";
import { type Failure, failure } from "../protocol/errors.js";

/** Far above any published sanctions list of addresses (a few thousand). */
export const MAX_DENIED_ADDRESSES = 1_000_000;

/** The payers and payees a payment names, as its family reads them without a chain call. */
export interface Parties {
  readonly payers: readonly string[];
  readonly payees: readonly string[];
}

const EVM = /^0x[0-9a-fA-F]{40}$/;

/** EVM addresses compare in lower case; Solana's (base58, 32 bytes) as written. */
function normal(address: string): string | undefined {
  const text = address.trim();
  if (EVM.test(text)) return text.toLowerCase();
  if (text.length >= 32 && text.length <= 44 && base58ToBytes(text)?.length === 32) return text;
  return undefined;
}

export class DenyList {
  readonly #addresses: ReadonlySet<string>;

  /** `name`: how refusals name the list (its file name). */
  constructor(
    readonly name: string,
    addresses: Iterable<string>,
  ) {
    this.#addresses = new Set(addresses);
  }

  get size(): number {
    return this.#addresses.size;
  }

  /** Whether every address `other` denies is denied here too (a reload that loosens nothing). */
  coversAll(other: DenyList): boolean {
    for (const address of other.#addresses) if (!this.#addresses.has(address)) return false;
    return true;
  }

  denies(address: string): boolean {
    const key = normal(address);
    return key !== undefined && this.#addresses.has(key);
  }

  /** `address_denied` for the first payer or payee on the list (with the payer, if it is one). */
  refusal(parties: Parties): { readonly failure: Failure; readonly payer?: string } | undefined {
    if (this.size === 0) return undefined;
    const refuse = (role: string, address: string) =>
      failure(
        "address_denied",
        `the ${role} ${address} is on this facilitator's deny list (${this.name}); its payments are not verified or settled here`,
      );
    const payer = parties.payers.find((address) => this.denies(address));
    if (payer !== undefined) return { failure: refuse("payer", payer), payer };
    const payee = parties.payees.find((address) => this.denies(address));
    if (payee !== undefined) return { failure: refuse("payee (payTo)", payee) };
    return undefined;
  }
}

/** The list in `text` (refusals call it `name`), or its first bad line. */
export function parseDenyList(text: string, name: string): DenyList | { readonly error: string } {
  const found = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    const entry = line.replace(/#.*/, "").trim();
    if (entry === "") continue;
    const address = normal(entry);
    if (address === undefined) {
      return {
        error: `line ${i + 1} is not an EVM (0x…) or Solana (base58) address; one address a line, # for comments`,
      };
    }
    found.add(address);
    if (found.size > MAX_DENIED_ADDRESSES) {
      return { error: `more than ${MAX_DENIED_ADDRESSES} addresses` };
    }
  }
  return new DenyList(name, found);
}
