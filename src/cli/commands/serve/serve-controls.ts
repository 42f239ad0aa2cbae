/** The operator controls a serve runs with, for its banner and its `listening` line. */
import type { ApiKeys } from "../../../http/callers.js";
import { DEFAULT_KEY_RATE } from "../../../http/rates.js";
import type { CliConfig } from "../../settings/config.js";

type Controls = ReturnType<typeof controlsInForce>;

export function controlsInForce(config: CliConfig, apiKeys: ApiKeys | undefined) {
  const keys = apiKeys?.keys ?? [];
  return {
    ...(config.denyList ? { denyList: config.denyList } : {}),
    ...(config.builderCode ? { builderCode: config.builderCode } : {}),
    ...(config.ratePerClient !== undefined ? { ratePerClient: config.ratePerClient } : {}),
    ...(keys.length > 0
      ? { keyRates: Object.fromEntries(keys.map((k) => [k.name, k.perMinute ?? DEFAULT_KEY_RATE])) }
      : {}),
  };
}

/** One banner line: each control in force, or that there is none. */
export function controlsLine(controls: Controls): string {
  const parts = [
    controls.denyList && `deny list ${controls.denyList} (re-read when it changes)`,
    controls.builderCode && `builder code ${controls.builderCode}`,
    controls.ratePerClient !== undefined &&
      `${controls.ratePerClient} requests a minute per client address`,
    controls.keyRates &&
      `rates per API key: ${Object.entries(controls.keyRates)
        .map(([name, perMinute]) => `${name} ${perMinute}/min`)
        .join(", ")}`,
  ].filter((p): p is string => typeof p === "string" && p.length > 0);
  return parts.length > 0 ? parts.join("; ") : "none (no deny list, builder code or rate limit)";
}
