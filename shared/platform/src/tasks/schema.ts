/**
 * The one migration helper for task-run tables: the column list is written here once, and every
 * migration that creates, upgrades or downgrades a task-run table takes its SQL from here.
 *
 * - A new owner: `for (const sql of createTaskRunTableSql(schema, table)) await q.query(sql)`.
 * - A table created before the lease model (issue 12): {@link taskRunUpgradeSql} in `up`,
 *   {@link dropLeaseColumnsSql} in `down`.
 *
 * The SQL these functions return is frozen: migrations that already ran call them, and an install
 * upgraded from any earlier version must end identical to a fresh one. `infra/standalone/test/
 * task-run-migrations.test.ts` compares every migration's SQL with the recorded text, byte for byte.
 */

/** Which version of the run model introduced a column: 1 = the first run tables (issue 11), 2 = leases and details (issue 12). */
type ModelVersion = 1 | 2;

/** The task-run columns, in table order: name, type and constraints, and the model version that added it. */
const TASK_RUN_COLUMNS: ReadonlyArray<readonly [name: string, definition: string, since: ModelVersion]> = [
  ['id', 'uuid PRIMARY KEY', 1],
  ['state', `text NOT NULL CHECK (state IN ('NEW','RUNNING','SUCCESS','FAIL','REVOKED'))`, 1],
  ['message', `text NOT NULL DEFAULT ''`, 1],
  ['progress', 'real NOT NULL DEFAULT 0', 1],
  ['servers', `jsonb NOT NULL DEFAULT '[]'::jsonb`, 1],
  ['log', `jsonb NOT NULL DEFAULT '[]'::jsonb`, 1],
  ['details', `jsonb NOT NULL DEFAULT '{}'::jsonb`, 2],
  ['seq', 'integer NOT NULL DEFAULT 0', 1],
  ['cancel_requested', 'boolean NOT NULL DEFAULT false', 1],
  ['started_at', 'timestamptz NOT NULL DEFAULT now()', 1],
  ['finished_at', 'timestamptz', 1],
  ['heartbeat_at', 'timestamptz NOT NULL DEFAULT now()', 1],
  ['lease_owner', 'text', 2],
  ['lease_generation', 'integer NOT NULL DEFAULT 0', 2],
  ['lease_expires_at', 'timestamptz', 2],
];

/** The lease columns (model version 2) that {@link dropLeaseColumnsSql} removes, last added first. */
const LEASE_COLUMNS = ['lease_expires_at', 'lease_generation', 'lease_owner'];

/**
 * The column definitions of a task-run table of model `version`, one per line, each line starting
 * with "\n" + `indent` (the layout the historical migrations used, so their SQL stays byte-identical).
 */
export function taskRunColumnsSql(indent = '  ', version: ModelVersion = 2): string {
  return TASK_RUN_COLUMNS.filter(([, , since]) => since <= version)
    .map(([name, definition]) => `\n${indent}${name} ${definition}`)
    .join(',');
}

/**
 * Columns of a task-run table (the analysis service's `runs` has exactly these). For a new owner use
 * {@link createTaskRunTableSql}.
 */
export const TASK_RUN_COLUMNS_SQL = taskRunColumnsSql();

/** The one-live-run index (a second start is refused by the database: 409) and the lease scan index. */
export function taskRunIndexesSql(schema: string, table: string): string[] {
  return [
    `CREATE UNIQUE INDEX IF NOT EXISTS ${table}_one_live ON "${schema}".${table} ((true)) WHERE state IN ('NEW','RUNNING')`,
    `CREATE INDEX IF NOT EXISTS ${table}_lease ON "${schema}".${table} (lease_expires_at) WHERE state IN ('NEW','RUNNING')`,
  ];
}

/** A new task-run table `<schema>.<table>` with its indexes (statements in order). */
export function createTaskRunTableSql(schema: string, table: string): string[] {
  return [`CREATE TABLE "${schema}".${table} (${TASK_RUN_COLUMNS_SQL})`, ...taskRunIndexesSql(schema, table)];
}

/** Adds the lease and details columns to a task-run table created before the lease model (idempotent). */
export function taskRunUpgradeSql(schema: string, table: string): string[] {
  return [
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS details jsonb NOT NULL DEFAULT '{}'::jsonb`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_owner text`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_generation integer NOT NULL DEFAULT 0`,
    `ALTER TABLE "${schema}".${table} ADD COLUMN IF NOT EXISTS lease_expires_at timestamptz`,
    ...taskRunIndexesSql(schema, table).slice(1),
  ];
}

/**
 * Reverse of {@link taskRunUpgradeSql} for a table that already had `details` before it: drops the
 * lease scan index and the lease columns (statements in order).
 */
export function dropLeaseColumnsSql(schema: string, table: string): string[] {
  return [`DROP INDEX IF EXISTS ${schema}.${table}_lease`, ...LEASE_COLUMNS.map((c) => `ALTER TABLE ${schema}.${table} DROP COLUMN ${c}`)];
}
