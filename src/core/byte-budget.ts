/** A Map bounded in estimated bytes, not entries (100,000 payers took 75 MiB of 96, issue 40); past
 * the budget the least recently set go. Only for what may be forgotten. */

/** A Map entry's cost beside its key and value (its hash table slot), measured at 100,000. */
const SLOT = 48;
/** A heap object's header (map, properties, elements), 8 bytes a word. */
const OBJECT = 24;

/** Bytes of a string on the heap: a header and one byte a character (two for non-Latin-1). */
export function stringBytes(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the one-byte range is the point
  const oneByte = /^[\u0000-\u00ff]*$/.test(text);
  return 16 + Math.ceil(((oneByte ? 1 : 2) * text.length) / 8) * 8;
}

/** An object of `fields` plain fields (numbers, references), not counting what they point to. */
export const objectBytes = (fields: number): number => OBJECT + 8 * fields;

/** An array of `length` slots, not what they point to: grown by push, it has room for 17. */
export const arrayBytes = (length: number): number => OBJECT + 16 + 8 * Math.max(17, length);

/** A bigint's bytes: a header and 64 bits a digit. */
export const bigintBytes = (value: bigint): number =>
  16 + 8 * Math.ceil((value < 0n ? -value : value).toString(16).length / 16);

/** A JSON-like value's bytes, walked; shared strings counted again: an estimate from above. */
export function valueBytes(value: unknown): number {
  if (typeof value === "string") return stringBytes(value);
  if (typeof value === "number")
    return Number.isInteger(value) && Math.abs(value) < 2 ** 30 ? 0 : 16;
  if (typeof value === "bigint") return bigintBytes(value);
  if (Array.isArray(value)) {
    return value.reduce((n: number, item) => n + valueBytes(item), OBJECT + 16 + 8 * value.length);
  }
  if (value === null || typeof value !== "object") return 0;
  let bytes = OBJECT;
  for (const key in value) bytes += 8 + valueBytes((value as Record<string, unknown>)[key]);
  return bytes;
}

export class BudgetMap<K, V> extends Map<K, V> {
  readonly #sizes = new Map<K, number>();
  #bytes = 0;
  /** The oldest entry's place: eviction does not walk over the holes before it again. */
  #oldest: Iterator<K> | undefined;

  readonly #maxEntries: number;
  readonly #onForget: ((key: K, value: V) => void) | undefined;

  /** `maxEntries` bounds the entries too; `onForget` is told of each one forgotten for a bound. */
  constructor(
    readonly maxBytes: number,
    private readonly sizeOf: (key: K, value: V) => number,
    options: { maxEntries?: number; onForget?: (key: K, value: V) => void } = {},
  ) {
    super();
    this.#maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
    this.#onForget = options.onForget;
  }

  /** The estimated bytes of every entry kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Sets `key` as the newest entry, then forgets the oldest while over the budget. */
  override set(key: K, value: V): this {
    if (this.#sizes.has(key)) this.delete(key);
    super.set(key, value);
    // Its slot here and in #sizes.
    const size = 2 * SLOT + this.sizeOf(key, value);
    this.#sizes.set(key, size);
    this.#bytes += size;
    while ((this.#bytes > this.maxBytes || this.size > this.#maxEntries) && this.size > 1) {
      this.#oldest ??= this.keys();
      const oldest = this.#oldest.next();
      if (oldest.done) {
        this.#oldest = undefined;
        continue;
      }
      const forgotten = super.get(oldest.value) as V;
      this.delete(oldest.value);
      this.#onForget?.(oldest.value, forgotten);
    }
    return this;
  }

  override delete(key: K): boolean {
    const size = this.#sizes.get(key);
    if (size !== undefined) {
      this.#bytes -= size;
      this.#sizes.delete(key);
    }
    return super.delete(key);
  }

  override clear(): void {
    this.#sizes.clear();
    this.#bytes = 0;
    this.#oldest = undefined;
    super.clear();
  }
}
