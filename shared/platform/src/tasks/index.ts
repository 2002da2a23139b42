/**
 * Task runs (issues 11, 12 and 29): one model of a long-running batch run, stored in the owning
 * service's schema, and one host that runs it.
 *
 * - `state.ts`: the state machine (NEW -> RUNNING -> SUCCESS | FAIL | REVOKED), the row type, the board snapshot.
 * - `schema.ts`: the one migration helper for task-run tables.
 * - `store.ts`: `TaskRunStore`, the SQL of a task-run table (create, claim, fenced writes, cancel).
 * - `lease-keeper.ts`: leases, fencing and the heartbeat (`LeaseKeeper`).
 * - `context.ts`: `TaskContext`, what an executor sees of its run and reports through.
 * - `host.ts`: `TaskHost` (start, takeover scan, cancel, idle, shutdown hand-back) and the `TaskExecutor` interface.
 */
export * from './state';
export * from './schema';
export * from './lease-keeper';
export * from './store';
export * from './context';
export * from './host';
