import { defineRoute } from './openapi';
import { z } from './zod';

/**
 * Import from the reference implementation (AudioMuse-AI), issue 34: `POST /api/import/audiomuse` starts a
 * task (type `import`, owner catalogue) that reads the reference's PostgreSQL database (a connection string,
 * opened read-only) or an uploaded `pg_dump` file (plain SQL or custom format), and `GET .../status` reports
 * the last import. Admin only.
 */

/** JSON body of a start with a connection string. */
export const ImportStartBody = z.object({
  /** `postgres://user:pass@host:port/db` of the reference's database; opened in read-only transactions only. */
  connection_string: z.string().min(1).max(2000),
  /** Report what would be imported without writing anything. */
  dry_run: z.boolean().optional(),
});
export type ImportStartBody = z.infer<typeof ImportStartBody>;

/** Query of a start with an uploaded dump (the body is the file). */
export const ImportUploadQuery = z.object({
  dry_run: z.enum(['true', 'false', '1', '0']).optional(),
});

/** Counts of one reference table: rows read, imported (new or updated), already present, skipped. */
export const ImportTableCount = z.object({ read: z.number().int(), imported: z.number().int(), existing: z.number().int(), skipped: z.number().int() });
export type ImportTableCount = z.infer<typeof ImportTableCount>;

/** The report of an import (the task's `details.report`). */
export const ImportReport = z.object({
  /** `multi-server` (v3.x: music_servers, track_server_map) or `single-server` (provider ids as item_id, app_config). */
  layout: z.enum(['multi-server', 'single-server']),
  dry_run: z.boolean(),
  /** The embedder version the imported vectors are served under. */
  embedder_version: z.string(),
  /** Per reference table. */
  tables: z.record(z.string(), ImportTableCount),
  /** Skipped rows, grouped by table and reason (count and up to 5 example keys). */
  skipped: z.array(z.object({ table: z.string(), reason: z.string(), count: z.number().int(), examples: z.array(z.string()) })),
  /** Reference server id -> polyphony server id. */
  servers: z.record(z.string(), z.string()),
  /** Wall time of reading and writing, ms. */
  elapsed_ms: z.number(),
});
export type ImportReport = z.infer<typeof ImportReport>;

/** GET /api/import/audiomuse/status: the last import task (null when none ran). */
export const ImportStatus = z.object({
  task_id: z.string().nullable(),
  state: z.string().nullable(),
  message: z.string().nullable(),
  progress: z.number().nullable(),
  report: ImportReport.nullable(),
});
export type ImportStatus = z.infer<typeof ImportStatus>;

const tags = ['import'];
export const importRoutes = {
  audiomuseStart: defineRoute({
    method: 'post',
    path: '/api/import/audiomuse',
    summary:
      'Import from the reference (AudioMuse-AI): JSON `{connection_string, dry_run?}`, or a `pg_dump` file (plain SQL or custom format) as an application/octet-stream body with `?dry_run=true|false`. 202 `{task_id}`; 409 while an import runs; 400 for an unreadable source',
    tags,
    access: 'admin',
    service: 'catalogue',
    uploadTypes: ['application/octet-stream', 'application/sql', 'application/x-sql'],
    query: ImportUploadQuery,
    bodyLimit: 8 * 1024,
    status: 202,
  }),
  audiomuseStatus: defineRoute({ method: 'get', path: '/api/import/audiomuse/status', summary: 'The last import from the reference: state, progress and report', tags, access: 'admin', service: 'catalogue', response: ImportStatus }),
};
