/** How the PostgreSQL store's parts run a query: timed under `op`, errors made store_unavailable. */
import type { Pool, PoolClient } from "pg";
import { markNotRecorded, STORE_RETRY_AFTER_SECONDS } from "../core/store.js";
import { FacilitatorError } from "../protocol/errors.js";
import { firstLine } from "../protocol/words.js";

export type Query = <R extends object = Record<string, unknown>>(
  op: string,
  text: string,
  values?: unknown[],
) => Promise<{ rows: R[]; rowCount: number }>;

/** Told how long each query took (metrics). */
export type OnQuery = ((op: string, seconds: number) => void) | undefined;

/** `work`, told to `onQuery` as `op` once done; a failure is store_unavailable. */
export async function timed<T>(op: string, onQuery: OnQuery, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } catch (error) {
    throw unavailable(error);
  } finally {
    onQuery?.(op, (performance.now() - started) / 1000);
  }
}

/** Runs each query on `pool`, timed. */
export function queryOn(pool: Pool, onQuery: OnQuery): Query {
  return (op, text, values = []) =>
    timed(op, onQuery, async () => {
      const result = await pool.query(text, values);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    });
}

/** `work` on one connection; a connection that cannot be made is store_unavailable. */
export async function withClient<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw unavailable(error);
  }
  // A lost connection is reported on the client: without a listener, it would kill the process.
  const ignore = () => undefined;
  client.on("error", ignore);
  try {
    return await work(client);
  } finally {
    client.off("error", ignore);
    client.release();
  }
}

/** `work` in one transaction of `client`, rolled back if it throws. */
export async function inTransaction<T>(client: PoolClient, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/** The store is unavailable (an error already answered stays); not recorded if it never ran. */
export function unavailable(error: unknown): FacilitatorError {
  if (error instanceof FacilitatorError) return error;
  const text = firstLine(error);
  const thrown = FacilitatorError.of(
    "store_unavailable",
    `the settlement store cannot be reached (${text}); nothing was sent`,
    { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  );
  // No connection could be made: the statement never reached the server. A connection lost
  // mid-statement leaves it unknown whether it was applied.
  const code = (error as { code?: string }).code;
  const neverSent =
    code === "ECONNREFUSED" ||
    code === "ENOTFOUND" ||
    code === "EHOSTUNREACH" ||
    /timeout exceeded when trying to connect|connection timeout/i.test(text);
  return neverSent ? markNotRecorded(thrown) : thrown;
}
