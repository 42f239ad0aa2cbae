/** How the PostgreSQL store's parts run a query: timed under `op`, errors made store_unavailable. */
export type Query = <R extends object = Record<string, unknown>>(
  op: string,
  text: string,
  values?: unknown[],
) => Promise<{ rows: R[]; rowCount: number }>;
