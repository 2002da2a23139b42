import { defineRoute } from './openapi';
import { z } from './zod';

/**
 * Operations API (registry service): schedules (`/api/cron`), backups (`/api/backup`) and task
 * control (`/api/cancel_all`, `/api/tasks`). Admin only.
 */

/** What a schedule can start. Each kind runs over every server (spec: Batch tasks 1). */
export const SCHEDULE_KINDS = ['analysis', 'clustering', 'cleaning', 'sweep', 'radios', 'index_rebuild', 'backup', 'album_of_the_week'] as const;
export const ScheduleKind = z.enum(SCHEDULE_KINDS);
export type ScheduleKind = z.infer<typeof ScheduleKind>;

/** Body of POST /api/cron and PUT /api/cron/:id. `cron` has 5 fields, or 6 with seconds first (croner syntax). */
export const ScheduleBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    kind: ScheduleKind,
    cron: z.string().trim().min(1).max(200).openapi({ example: '0 3 * * *', description: 'minute hour day-of-month month day-of-week, optionally a leading seconds field' }),
    timezone: z.string().trim().min(1).max(100).default('UTC').openapi({ example: 'Europe/Berlin', description: 'IANA time zone the expression is evaluated in' }),
    enabled: z.boolean().default(true),
    /** Start parameters passed to the task (e.g. `{clean_catalogue: false}` for cleaning, `{keep: 7}` for backups). */
    params: z.record(z.unknown()).default({}),
  })
  .strict()
  .openapi('ScheduleBody');
export type ScheduleBody = z.infer<typeof ScheduleBody>;

export const ScheduleRunDto = z
  .object({
    fired_at: z.string(),
    /** started | skipped: busy | failed */
    outcome: z.string(),
    task_id: z.string().nullable(),
    message: z.string(),
  })
  .openapi('ScheduleRun');

export const ScheduleDto = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: ScheduleKind,
    cron: z.string(),
    timezone: z.string(),
    enabled: z.boolean(),
    params: z.record(z.unknown()),
    next_run_at: z.string().nullable(),
    last_run_at: z.string().nullable(),
    last_result: z.string().nullable(),
    last_task_id: z.string().nullable(),
    history: z.array(ScheduleRunDto),
  })
  .openapi('Schedule');
export type ScheduleDto = z.infer<typeof ScheduleDto>;

export const CronPreviewBody = z.object({ cron: z.string().trim().min(1).max(200), timezone: z.string().trim().min(1).max(100).default('UTC'), count: z.number().int().min(1).max(20).default(5) }).strict();

export const BackupDto = z
  .object({
    id: z.string(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    /** running | ready | failed */
    status: z.string(),
    size_bytes: z.number().nullable(),
    sha256: z.string().nullable(),
    format_version: z.number(),
    /** encrypted | excluded */
    secrets: z.string(),
    rows: z.number().nullable(),
    message: z.string(),
    task_id: z.string().nullable(),
  })
  .openapi('Backup');
export type BackupDto = z.infer<typeof BackupDto>;

/** Body of POST /api/backup. With `passphrase`, secrets (media-server tokens, passwords, API keys) are kept AES-256-GCM encrypted; without it they are left out. */
export const BackupStartBody = z.object({ passphrase: z.string().min(8).max(1000).optional() }).strict();

export const TaskHistoryQuery = z.object({
  kind: z.string().max(50).optional(),
  state: z.enum(['NEW', 'RUNNING', 'SUCCESS', 'FAIL', 'REVOKED']).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const opsRoutes = {
  cronList: defineRoute({ method: 'get', path: '/api/cron', summary: 'Schedules with next run, last run, last result and recent firings', tags: ['operations'], access: 'admin', service: 'registry', response: z.object({ schedules: z.array(ScheduleDto) }) }),
  cronCreate: defineRoute({ method: 'post', path: '/api/cron', summary: 'Add a schedule (400 with the parse error for a bad expression, time zone or kind)', tags: ['operations'], access: 'admin', service: 'registry', body: ScheduleBody, response: ScheduleDto, status: 201 }),
  cronUpdate: defineRoute({ method: 'put', path: '/api/cron/:id', summary: 'Replace a schedule', tags: ['operations'], access: 'admin', service: 'registry', params: z.object({ id: z.string().uuid() }), body: ScheduleBody, response: ScheduleDto }),
  cronDelete: defineRoute({ method: 'delete', path: '/api/cron/:id', summary: 'Delete a schedule', tags: ['operations'], access: 'admin', service: 'registry', params: z.object({ id: z.string().uuid() }) }),
  cronPreview: defineRoute({ method: 'post', path: '/api/cron/preview', summary: 'Next run times of an expression (no side effect)', tags: ['operations'], access: 'admin', service: 'registry', body: CronPreviewBody, response: z.object({ next: z.array(z.string()) }) }),
  backupList: defineRoute({ method: 'get', path: '/api/backup', summary: 'Backups on the backup volume', tags: ['operations'], access: 'admin', service: 'registry', response: z.object({ backups: z.array(BackupDto) }) }),
  backupCreate: defineRoute({ method: 'post', path: '/api/backup', summary: 'Start a consistent backup of everything the user owns (202)', tags: ['operations'], access: 'admin', service: 'registry', body: BackupStartBody, status: 202 }),
  backupDownload: defineRoute({ method: 'get', path: '/api/backup/:id', summary: 'Download a backup archive (application/gzip)', tags: ['operations'], access: 'admin', service: 'registry', params: z.object({ id: z.string().regex(/^[0-9a-z-]{1,80}$/) }) }),
  backupDelete: defineRoute({ method: 'delete', path: '/api/backup/:id', summary: 'Delete a backup', tags: ['operations'], access: 'admin', service: 'registry', params: z.object({ id: z.string().regex(/^[0-9a-z-]{1,80}$/) }) }),
  backupRestore: defineRoute({
    method: 'post',
    path: '/api/backup/restore',
    summary: 'Restore a backup (`?id=<backup id>`, or the archive as an application/gzip upload body; `passphrase` header or query for encrypted secrets). All or nothing; the index is rebuilt after',
    tags: ['operations'],
    access: 'admin', service: 'registry',
    uploadTypes: ['application/gzip', 'application/x-gzip', 'application/octet-stream'],
    query: z.object({ id: z.string().regex(/^[0-9a-z-]{1,80}$/).optional(), passphrase: z.string().max(1000).optional() }),
    status: 200,
  }),
  cancelAll: defineRoute({ method: 'post', path: '/api/cancel_all', summary: 'Cancel every live task (work done is kept)', tags: ['tasks'], access: 'admin', service: 'registry' }),
  cancelAllOfType: defineRoute({ method: 'post', path: '/api/cancel_all/:type', summary: 'Cancel every live task whose type starts with the prefix (plugin shape)', tags: ['tasks'], access: 'admin', service: 'registry', params: z.object({ type: z.string().max(100) }) }),
  taskHistory: defineRoute({ method: 'get', path: '/api/tasks', summary: 'Task history with per-server results and durations', tags: ['tasks'], access: 'admin', service: 'registry', query: TaskHistoryQuery }),
};
