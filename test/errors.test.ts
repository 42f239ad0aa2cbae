/** The one error table and what is said about it elsewhere stay in step. */
import { describe, expect, test } from "vitest";
import { ERRORS, type ErrorCode, type ErrorSpec, failure } from "../src/protocol/errors.js";
import { exitCodeOf } from "../src/protocol/respond.js";
import { readDoc, tableRows } from "./helpers/markdown.js";

describe("docs/errors.md error table", () => {
  const page = readDoc("docs/errors.md");
  const rows = new Map(
    tableRows(page)
      .map((cells) => ({ code: /^`([a-z][a-z0-9_]*)`$/.exec(cells[0] ?? "")?.[1], cells }))
      .filter((row): row is { code: string; cells: string[] } => row.code !== undefined)
      .map((row) => [row.code, row.cells]),
  );

  test.each(Object.keys(ERRORS) as ErrorCode[])(
    "lists %s with its status and x402 reason",
    (code) => {
      const row = rows.get(code);
      expect(row, `docs/errors.md has no row for ${code}`).toBeDefined();
      const spec: ErrorSpec = ERRORS[code];
      // A CLI-only code has no HTTP status: the page says so instead.
      expect(row?.[1]).toContain(spec.cliOnly ? "CLI only" : String(spec.status));
      // unexpected_error goes out as unexpected_verify_error or unexpected_settle_error.
      const reasons =
        spec.x402 === "unexpected_error"
          ? ["unexpected_verify_error", "unexpected_settle_error"]
          : [spec.x402];
      expect(
        reasons.some((reason) => row?.[2]?.includes(`\`${reason}\``)),
        `the row of ${code} names ${reasons.join(" or ")}`,
      ).toBe(true);
    },
  );

  test("lists no code the error table lacks", () => {
    const unknown = [...rows.keys()].filter((code) => !(code in ERRORS));
    expect(unknown, "codes on docs/errors.md that src/errors.ts does not have").toEqual([]);
  });
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
