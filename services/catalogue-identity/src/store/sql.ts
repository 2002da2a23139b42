/** Small helpers for parameterised SQL through TypeORM's `query`. */

/** Something that runs SQL: a DataSource, an EntityManager inside a transaction, a QueryRunner. */
export interface Queryable {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(sql: string, parameters?: unknown[]): Promise<any>;
}

/**
 * Rows of an UPDATE/DELETE ... RETURNING. TypeORM's PostgreSQL driver answers those two commands with
 * `[rows, rowCount]` instead of the rows (INSERT and SELECT give the rows); this accepts both forms.
 */
export function returnedRows<T = unknown>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}
