/** The schemes the EVM family serves: a scheme is a folder, registered here with one line. */
import { batchSettlementScheme } from "./batch-settlement/index.js";
import { exactScheme } from "./exact/index.js";
import type { EvmScheme } from "./scheme.js";
import { uptoScheme } from "./upto/index.js";

export const EVM_SCHEMES = [
  exactScheme,
  uptoScheme,
  batchSettlementScheme,
] as const satisfies readonly EvmScheme[];

type Registered = (typeof EVM_SCHEMES)[number];
type Both<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** The family's options each registered scheme takes, all of them (its SchemeOwn's `make`). */
export type SchemeOptions = Both<
  Registered extends infer S
    ? S extends { readonly own: { make(options: infer O): unknown } }
      ? O
      : object
    : never
>;

/** The rows of the CLI's settings table each registered scheme declares, all of them. */
export type SchemeRows = Both<
  Registered extends infer S
    ? S extends { readonly settings: { readonly rows: infer R } }
      ? R
      : object
    : never
>;
