/** The one error table and what is said about it elsewhere stay in step. */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { ERRORS, type ErrorCode, type ErrorSpec, failure } from "../src/protocol/errors.js";
import { exitCodeOf } from "../src/protocol/respond.js";

describe("README error table", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const rows = new Map(
    [...readme.matchAll(/^\|\s*`([a-z0-9_]+)`\s*\|([^|]+)\|([^|]+)\|/gm)].map((m) => [m[1], m]),
  );

  test.each(Object.keys(ERRORS) as ErrorCode[])(
    "lists %s with its status and x402 reason",
    (code) => {
      const row = rows.get(code);
      expect(row, `README has no row for ${code}`).toBeDefined();
      const spec: ErrorSpec = ERRORS[code];
      // A CLI-only code has no HTTP status: the README says so instead.
      expect(row?.[2]).toContain(spec.cliOnly ? "CLI only" : String(spec.status));
      const reason = ERRORS[code].x402;
      if (reason !== "unexpected_error") expect(row?.[3]).toContain(`\`${reason}\``);
    },
  );
});

describe("CLI exit status", () => {
  const reply = (code: ErrorCode, status?: number) => ({
    status: 0,
    body: {},
    failure: failure(code, "x", status ? { status } : {}),
  });
  test("0 success, 1 rejected, 2 unusable input, 3 infrastructure", () => {
    expect(exitCodeOf({ status: 200, body: {} })).toBe(0);
    expect(exitCodeOf(reply("insufficient_funds"))).toBe(1);
    expect(exitCodeOf(reply("settlement_failed"))).toBe(1);
    expect(exitCodeOf(reply("invalid_request"))).toBe(2);
    expect(exitCodeOf(reply("settlement_failed", 500))).toBe(3);
    expect(exitCodeOf(reply("settlement_pending"))).toBe(3);
    expect(exitCodeOf(reply("chain_unavailable"))).toBe(3);
    expect(exitCodeOf(reply("interrupted"))).toBe(130);
  });
});
