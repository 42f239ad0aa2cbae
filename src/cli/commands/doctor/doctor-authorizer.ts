/** `facilitator doctor` on the batch-settlement receiver authorizer key. */
import type { CliConfig } from "../../settings/config.js";
import { receiverAuthorizerOf } from "../../settings/config-keys.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";

import { errorFinding, type Finding, finding } from "./doctor-checks.js";

const authorizer = SETTINGS.receiverAuthorizerKey;

/** The batch-settlement receiver authorizer: configured or not, its address, never its key. */
export function checkReceiverAuthorizer(config: CliConfig): Finding[] {
  let key: `0x${string}` | undefined;
  try {
    key = config.loadReceiverAuthorizerKey();
  } catch (error) {
    return [errorFinding("key", error)];
  }
  if (key === undefined) {
    const message =
      "no receiver authorizer: batch-settlement sellers sign their own claims and refunds";
    return [finding("key", "ok", message)];
  }
  let settlementKeys: `0x${string}`[] = [];
  try {
    settlementKeys = config.loadPrivateKeys();
  } catch {
    // checkKeys reports an unreadable settlement key.
  }
  try {
    const account = receiverAuthorizerOf(key, settlementKeys);
    const message = `receiver authorizer ${account?.address}: signs batch-settlement claims and refunds (needs no gas)`;
    return [finding("key", "ok", message)];
  } catch (error) {
    const fix = `give the receiver authorizer a key of its own (${flagName(authorizer.flag)} FILE or ${authorizer.env})`;
    return [finding("key", "error", (error as Error).message, fix)];
  }
}
