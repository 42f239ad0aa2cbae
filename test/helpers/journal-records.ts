/** Settlement records as the EVM exact scheme journals them, numbered, for the journal's tests. */
import { readdirSync, readFileSync } from "node:fs";
import type { Hex } from "viem";
import type { NewEntry } from "../../src/core/store.js";

/** Limits that stand in for a long run's: 20,000 settled entries in memory, 50,000 lines. */
export const SMALL = { settledInMemory: 100, compactAfterLines: 300 } as const;

/** A payment-identifier (16 to 128 characters). */
export const idOf = (i: number) => `pay_${String(i).padStart(12, "0")}`;

export const hashOf = (i: number) => `0x${i.toString(16).padStart(64, "0")}` as Hex;

const token = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const payer = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

export function entryOf(i: number): NewEntry {
  return {
    key: `k${i}`,
    network: "eip155:31337",
    signer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    txNonce: i,
    expect: {
      token,
      from: payer,
      to: "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
      value: "10000",
    },
  };
}

/** A settle answer, as a payment-identifier keeps it. */
export const answerOf = (i: number) => ({
  success: true,
  transaction: hashOf(i),
  transactionHash: hashOf(i),
  network: "eip155:31337",
});

/**
 * Where each settlement is held on disk: how many of the live file and the archive segments it
 * names (a send or a whole entry) hold `k<i>`. Every settlement must be held exactly once.
 */
export function holdings(file: string): Map<string, number> {
  const held = new Map<string, number>();
  const count = (keys: Set<string>) => {
    for (const key of keys) held.set(key, (held.get(key) ?? 0) + 1);
  };
  let through = 0;
  const live = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const record = parse(line);
    if (record?.t === "archive") through = record.through as number;
    if (record?.t === "send" || record?.t === "entry") live.add(record.key as string);
  }
  count(live);
  const dir = `${file}.archive`;
  const names = (() => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  })();
  for (const name of names.filter((n) => /^\d+\.jsonl$/.test(n))) {
    if (Number.parseInt(name, 10) > through) continue;
    const keys = new Set<string>();
    for (const line of readFileSync(`${dir}/${name}`, "utf8").split("\n")) {
      const record = parse(line);
      if (record?.t === "entry") keys.add(record.key as string);
    }
    count(keys);
  }
  return held;
}

function parse(line: string): Record<string, unknown> | undefined {
  try {
    return line ? (JSON.parse(line) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
