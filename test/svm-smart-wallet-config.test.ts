/**
 * The smart-wallet settings (docs/configuration.md): off unless switched on; on, the reference's
 * allow-list and caps unless set; what is set is checked as it is read.
 */
import { describe, expect, test } from "vitest";
import { loadConfig } from "../src/cli/settings/config.js";
import { DEFAULT_SMART_WALLET_PROGRAMS } from "../src/svm/exact/constants.js";

const SQUADS = "SQDS4ep65T869zMMBKyuUq6aD6EgTu8psMjkvj52pCf";
const TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";

describe("--svm-smart-wallets and its limits", () => {
  test("off by default, and the other settings alone do not switch it on", () => {
    expect(loadConfig({}, {}).svmSmartWallets).toBeUndefined();
    const env = { FACILITATOR_SVM_SMART_WALLET_PROGRAMS: TOKEN };
    expect(loadConfig({}, env).svmSmartWallets).toBeUndefined();
    expect(loadConfig({}, { FACILITATOR_SVM_SMART_WALLETS: "0" }).svmSmartWallets).toBeUndefined();
  });

  test("on: the reference's seven programs, 400,000 units, 50,000 micro-lamports", () => {
    expect(loadConfig({}, { FACILITATOR_SVM_SMART_WALLETS: "1" }).svmSmartWallets).toEqual({
      allowedPrograms: DEFAULT_SMART_WALLET_PROGRAMS,
      maxComputeUnits: 400_000,
      maxPriorityFeeMicroLamports: 50_000n,
    });
    expect(DEFAULT_SMART_WALLET_PROGRAMS).toHaveLength(7);
    expect(DEFAULT_SMART_WALLET_PROGRAMS).toContain(SQUADS);
  });

  test("on, with a list of programs and caps from flags and the environment", () => {
    const flags = { svmSmartWallets: true, svmSmartWalletProgram: [TOKEN, SQUADS] };
    const env = {
      FACILITATOR_SVM_SMART_WALLET_MAX_UNITS: "300000",
      FACILITATOR_SVM_SMART_WALLET_MAX_PRICE: "0",
    };
    expect(loadConfig(flags as never, env).svmSmartWallets).toEqual({
      allowedPrograms: [TOKEN, SQUADS],
      maxComputeUnits: 300_000,
      maxPriorityFeeMicroLamports: 0n,
    });
  });

  test("what is not a Solana address or a whole number is refused, naming the setting", () => {
    const on = { FACILITATOR_SVM_SMART_WALLETS: "1" };
    expect(() =>
      loadConfig({}, { ...on, FACILITATOR_SVM_SMART_WALLET_PROGRAMS: `${TOKEN},0x1234` }),
    ).toThrow(/2nd entry of FACILITATOR_SVM_SMART_WALLET_PROGRAMS is not a Solana address/);
    expect(() => loadConfig({}, { ...on, FACILITATOR_SVM_SMART_WALLET_MAX_UNITS: "0" })).toThrow(
      /FACILITATOR_SVM_SMART_WALLET_MAX_UNITS must be a whole number from 1 to 1400000/,
    );
    expect(() => loadConfig({}, { ...on, FACILITATOR_SVM_SMART_WALLET_MAX_PRICE: "-1" })).toThrow(
      /FACILITATOR_SVM_SMART_WALLET_MAX_PRICE must be a whole number from 0/,
    );
  });
});
