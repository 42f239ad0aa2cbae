/** The schemes the EVM family serves: a scheme is a folder, registered here with one line. */
import { batchSettlementScheme } from "./batch-settlement/index.js";
import { exactScheme } from "./exact/index.js";
import type { EvmScheme } from "./scheme.js";
import { uptoScheme } from "./upto/index.js";

export const EVM_SCHEMES: readonly EvmScheme[] = [exactScheme, uptoScheme, batchSettlementScheme];
