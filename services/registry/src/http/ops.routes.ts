import type { Request } from 'express';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { api, type OwnerSettingsDto } from '@polyphony/contracts';
import { createLlmProvider, testLlmProvider, LlmError } from '@polyphony/llm';
import { AppError, ValidationError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { BackupService } from '../domain/backup.service';
import type { ScheduleService } from '../domain/schedule.service';
import type { SettingsService } from '../domain/settings.service';

/** Largest archive accepted as an upload (bytes, compressed); stored backups of any size restore by id. */
export const RESTORE_UPLOAD_LIMIT_BYTES = 4 * 1024 ** 3;

/**
 * Schedules (`/api/cron`), backups (`/api/backup`) and settings (`PUT /api/config`, `GET /api/config/settings`), admin only (the route table's access: the gateway and mountRoutes enforce it).
 * Errors: 400 for an invalid expression, time zone, kind, archive or passphrase (nothing stored or
 * changed), 404 unknown ids, 409 name taken or a backup/restore/task already running, 413 an
 * upload above RESTORE_UPLOAD_LIMIT_BYTES.
 */
export function opsRoutesRouter(schedules: ScheduleService, backups: BackupService, settings: SettingsService): RouteHandlers {
  const r = routeHandlers();

  r.json(api.settings.settingsList, async () => ({ settings: await settings.list() }));
  r.json(api.settings.settingsUpdate, async ({ body }) => ({ ...(await settings.update(body)), settings: await settings.list() }));
  r.json(api.chat.aiTest, async () => {
    const ai = await settings.aiSettings();
    let provider;
    try {
      provider = createLlmProvider(ai, { attempts: 1 });
    } catch (err) {
      return { ok: false, provider: ai.provider, model: null, latency_ms: 0, error: (err as LlmError).message };
    }
    if (!provider) return { ok: false, provider: 'NONE', model: null, latency_ms: 0, error: 'No AI provider is configured (AI_MODEL_PROVIDER is NONE)' };
    return testLlmProvider(provider);
  });
  // Services only (the route table's `internal` access): the provider settings with their keys.
  r.json(api.internal.aiSettings, () => settings.aiSettings());
  // Services only: the effective non-secret settings one service applies (index, playlist, catalogue, analysis).
  r.json(api.internal.ownerSettings, async ({ params: { owner } }) => ({ values: await settings.valuesOf(owner) }) satisfies OwnerSettingsDto);

  r.json(api.ops.cronList, async () => ({ schedules: await schedules.list() }));
  r.json(api.ops.cronPreview, ({ body: b }) => ({ next: schedules.preview(b.cron, b.timezone, b.count) }));
  r.json(api.ops.cronCreate, ({ body }) => schedules.create(body));
  r.json(api.ops.cronUpdate, ({ params: { id }, body }) => schedules.update(id, body));
  r.json(api.ops.cronDelete, async ({ params: { id } }) => {
    await schedules.remove(id);
    return { deleted: id };
  });

  r.json(api.ops.backupList, async () => ({ backups: await backups.list() }));
  r.json(api.ops.backupCreate, ({ body }) => backups.start({ passphrase: body.passphrase }));
  // The archive comes as the request body (streamed to the backup volume, never parsed), or names a stored backup (`?id=`).
  r.json(api.ops.backupRestore, async ({ query: q }, req, res) => {
    const passphrase = headerValue(req, 'x-backup-passphrase') ?? q.passphrase;
    if (q.id) {
      const { path } = await backups.archivePath(q.id);
      res.json({ restored: await backups.restore(path, passphrase) });
      return;
    }
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!['application/gzip', 'application/x-gzip', 'application/octet-stream'].includes(type)) throw new ValidationError('Send the archive as an application/gzip body, or give ?id=<backup id>');
    const path = await backups.uploadPath();
    try {
      await receive(req, path, RESTORE_UPLOAD_LIMIT_BYTES);
      res.json({ restored: await backups.restore(path, passphrase) });
    } finally {
      await rm(path, { force: true });
    }
  });
  r.json(api.ops.backupDownload, async ({ params: { id } }, _req, res) => {
    const { path, fileName, size } = await backups.archivePath(id);
    res.setHeader('content-type', 'application/gzip');
    res.setHeader('content-length', String(size));
    res.setHeader('content-disposition', `attachment; filename="${fileName}"`);
    await pipeline(backups.openArchive(path), res);
  });
  r.json(api.ops.backupDelete, async ({ params: { id } }) => {
    await backups.remove(id);
    return { deleted: id };
  });
  return r;
}

function headerValue(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v.length ? v : undefined;
}

/** Streams the request body to `path`, refusing (413) more than `limit` bytes. */
async function receive(req: Request, path: string, limit: number): Promise<void> {
  let seen = 0;
  const guard = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) cb(new AppError('payload_too_large', `Archive larger than ${limit} bytes`, 413));
      else cb(null, chunk);
    },
  });
  await pipeline(req, guard, createWriteStream(path, { mode: 0o600 }));
  if (seen === 0) throw new ValidationError('The upload is empty');
}
