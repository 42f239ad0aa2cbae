/**
 * Address lookup tables on the Solana devnet, made as a client makes them: the Address Lookup
 * Table program's CreateLookupTable and ExtendLookupTable instructions, sent through the devnet's
 * RPC. `@solana-program/address-lookup-table` is not installed here, so the instructions are built
 * from the program's documented layout: a u32 instruction tag, then for Create (0) the recent slot
 * (u64) and the table address's bump (u8), for Extend (2) the new addresses as a u64 count and
 * 32 bytes each; accounts [table (writable), authority (signer), payer (writable signer), system
 * program]. The table's address is the program-derived address of [authority, recent slot].
 *
 * And a rewriter for payments whose accounts come from a table in ways @solana/kit never compiles
 * (the fee payer loaded through a table beside its static key): the compiled message edited, then
 * signed again by the payer.
 */
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  type CompiledTransactionMessage,
  compileTransactionMessage,
  compressTransactionMessageUsingAddressLookupTables,
  createKeyPairSignerFromBytes,
  createTransactionMessage,
  decompileTransactionMessage,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getProgramDerivedAddress,
  getTransactionDecoder,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { type SvmDevKey, type SvmDevnet, secretKeyBytes } from "../../src/svm/devnet/index.js";
import { ADDRESS_LOOKUP_TABLE_PROGRAM } from "../../src/svm/exact/constants.js";
import { svmRpc } from "./svm-devnet.js";

const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;
const PROGRAM = ADDRESS_LOOKUP_TABLE_PROGRAM as Address;

async function sendSigned(devnet: SvmDevnet, signer: KeyPairSigner, instructions: never[]) {
  const answer = await svmRpc(devnet, "getLatestBlockhash", [{ commitment: "processed" }]);
  const { blockhash } = (answer.result as { value: { blockhash: string } }).value;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(signer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash as Blockhash, lastValidBlockHeight: 1_000n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const wire = getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
  const sent = await svmRpc(devnet, "sendTransaction", [wire, { encoding: "base64" }]);
  if (sent.error) throw new Error(`lookup table transaction refused: ${sent.error.message}`);
}

/**
 * A lookup table holding `addresses`, created and extended by `owner` (its authority and payer)
 * through the Address Lookup Table program, usable once this returns (a slot has passed).
 */
export async function createLookupTable(
  devnet: SvmDevnet,
  owner: SvmDevKey,
  addresses: readonly Address[],
): Promise<Address> {
  const signer = await createKeyPairSignerFromBytes(secretKeyBytes(owner));
  // A table is made for a recent slot, one the SlotHashes sysvar holds: the last one ended.
  devnet.cluster.tick();
  const slot = devnet.cluster.clock.slot - 1n;
  const slotBytes = Buffer.alloc(8);
  slotBytes.writeBigUInt64LE(slot);
  const [table, bump] = await getProgramDerivedAddress({
    programAddress: PROGRAM,
    seeds: [getAddressEncoder().encode(signer.address), slotBytes],
  });
  const accounts = [
    { address: table, role: AccountRole.WRITABLE },
    { address: signer.address, role: AccountRole.READONLY_SIGNER, signer },
    { address: signer.address, role: AccountRole.WRITABLE_SIGNER, signer },
    { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
  ];
  const create = Buffer.alloc(13);
  create.writeUInt32LE(0, 0);
  create.writeBigUInt64LE(slot, 4);
  create.writeUInt8(bump, 12);
  const instruction = (data: Buffer) => ({ programAddress: PROGRAM, accounts, data }) as never;
  await sendSigned(devnet, signer, [instruction(create)]);
  // A transaction holds at most 1,232 bytes: extend by 20 addresses at a time.
  for (let from = 0; from < addresses.length; from += 20) {
    const chunk = addresses.slice(from, from + 20);
    const extend = Buffer.alloc(12 + 32 * chunk.length);
    extend.writeUInt32LE(2, 0);
    extend.writeBigUInt64LE(BigInt(chunk.length), 4);
    for (const [i, address] of chunk.entries()) {
      extend.set(getAddressEncoder().encode(address), 12 + 32 * i);
    }
    await sendSigned(devnet, signer, [instruction(extend)]);
  }
  // Addresses a table gained in this slot are usable from the next one.
  devnet.cluster.tick();
  return table;
}

function compiledOf(transaction: string): CompiledTransactionMessage {
  const wire = getTransactionDecoder().decode(getBase64Encoder().encode(transaction));
  return getCompiledTransactionMessageDecoder().decode(wire.messageBytes);
}

/**
 * The payment (the official client's, say) as a wallet that compresses it with a lookup table
 * sends it: every account of its instructions that `addresses` holds, and that is not a signer,
 * taken from `table` instead of the static keys (@solana/kit's compression), signed again by
 * `payer`.
 */
export function compressPayment(
  transaction: string,
  payer: KeyPairSigner,
  table: Address,
  addresses: readonly Address[],
): Promise<string> {
  // The official client's messages are version 0, as compression needs.
  const decompiled = decompileTransactionMessage(compiledOf(transaction) as never);
  const message = compressTransactionMessageUsingAddressLookupTables(decompiled as never, {
    [table]: [...addresses],
  });
  const compiled = compileTransactionMessage(message as never) as CompiledTransactionMessage;
  return signedBy(payer, compiled);
}

/**
 * The payment with its compiled message changed by `edit` and signed again by `payer` (the fee
 * payer's signature stays empty: the facilitator adds it at settle).
 */
export function rewritePayment(
  transaction: string,
  payer: KeyPairSigner,
  edit: (message: CompiledTransactionMessage) => CompiledTransactionMessage,
): Promise<string> {
  return signedBy(payer, edit(compiledOf(transaction)));
}

async function signedBy(payer: KeyPairSigner, compiled: CompiledTransactionMessage) {
  const message = Uint8Array.from(getCompiledTransactionMessageEncoder().encode(compiled));
  const signers = compiled.staticAccounts.slice(0, compiled.header.numSignerAccounts);
  const bytes = [signers.length];
  for (const signer of signers) {
    const signature =
      signer === payer.address
        ? await signBytes(payer.keyPair.privateKey, message)
        : new Uint8Array(64);
    bytes.push(...signature);
  }
  return Buffer.from([...bytes, ...message]).toString("base64");
}

/**
 * For a payment whose source, mint and destination compressPayment took from one table: its
 * loaded accounts follow the static keys, source and destination (writable), then the mint
 * (read-only). This edit loads table entry `entry` read-only after them and hands its account
 * index to `place` (to name it in an instruction).
 */
export function loadAlso(
  entry: number,
  place: (m: CompiledTransactionMessage, index: number) => void,
) {
  return (m: CompiledTransactionMessage): CompiledTransactionMessage => {
    const edited = structuredClone(m) as CompiledTransactionMessage & {
      addressTableLookups: { readonlyIndexes: number[] }[];
    };
    const lookup = edited.addressTableLookups[0];
    if (!lookup) throw new Error("the payment uses no table");
    lookup.readonlyIndexes.push(entry);
    place(edited, edited.staticAccounts.length + 3);
    return edited;
  };
}

/** Sets account `position` of instruction `ix` (appends it when past the end). */
export const atAccount =
  (ix: number, position: number) => (m: CompiledTransactionMessage, index: number) => {
    const { instructions } = m as { instructions: { accountIndices?: number[] }[] };
    const instruction = instructions[ix];
    if (!instruction) throw new Error(`no instruction ${ix}`);
    const accounts = [...(instruction.accountIndices ?? [])];
    accounts[position] = index;
    instruction.accountIndices = accounts;
  };
