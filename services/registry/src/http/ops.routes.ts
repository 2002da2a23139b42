import type { Request } from 'express';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { BackupStartBody, CronPreviewBody, ScheduleBody, SettingsUpdateBody, opsRoutes, SettingsOwnerParam, z, api, type OwnerSettingsDto } from '@polyphony/contracts';
import { createLlmProvider, testLlmProvider, LlmError } from '@polyphony/llm';
import { AppError, ForbiddenError, ValidationError, asyncRoute, parseOrThrow, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { BackupService } from '../domain/backup.service';
import type { ScheduleService } from '../domain/schedule.service';
import type { SettingsService } from '../domain/settings.service';

const IdParam = z.object({ id: z.string().uuid() });
const BackupIdParam = opsRoutes.backupDownload.params;
const RestoreQuery = z.object({ id: z.string().regex(/^[0-9a-z-]{1,80}$/).optional(), passphrase: z.string().max(1000).optional() });

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

  r.on(api.settings.settingsList, asyncRoute(async (_req, res) => void res.json({ settings: await settings.list() })));
  r.on(api.settings.settingsUpdate, asyncRoute(async (req, res) => {
    const result = await settings.update(parseOrThrow(SettingsUpdateBody, req.body, 'settings'));
    res.json({ ...result, settings: await settings.list() });
  }));
  r.on(api.chat.aiTest, asyncRoute(async (_req, res) => {
    const ai = await settings.aiSettings();
    let provider;
    try {
      provider = createLlmProvider(ai, { attempts: 1 });
    } catch (err) {
      res.json({ ok: false, provider: ai.provider, model: null, latency_ms: 0, error: (err as LlmError).message });
      return;
    }
    if (!provider) {
      res.json({ ok: false, provider: 'NONE', model: null, latency_ms: 0, error: 'No AI provider is configured (AI_MODEL_PROVIDER is NONE)' });
      return;
    }
    res.json(await testLlmProvider(provider));
  }));
  // Services only (the gateway never routes /internal): the provider settings with their keys.
  r.on(api.internal.aiSettings, asyncRoute(async (req, res) => {
    if (req.identity?.via !== 'internal') throw new ForbiddenError('Internal endpoint');
    res.json(await settings.aiSettings());
  }));

  // Services only: the effective non-secret settings one service applies (index, playlist, catalogue, analysis).
  r.on(api.internal.ownerSettings, asyncRoute(async (req, res) => {
    if (req.identity?.via !== 'internal') throw new ForbiddenError('Internal endpoint');
    const { owner } = parseOrThrow(SettingsOwnerParam, req.params, 'path');
    res.json({ values: await settings.valuesOf(owner) } satisfies OwnerSettingsDto);
  }));

  r.on(api.ops.cronList, asyncRoute(async (_req, res) => void res.json({ schedules: await schedules.list() })));
  r.on(api.ops.cronPreview, asyncRoute(async (req, res) => {
    const b = parseOrThrow(CronPreviewBody, req.body, 'cron preview');
    res.json({ next: schedules.preview(b.cron, b.timezone, b.count) });
  }));
  r.on(api.ops.cronCreate, asyncRoute(async (req, res) => void res.status(201).json(await schedules.create(parseOrThrow(ScheduleBody, req.body, 'schedule')))));
  r.on(api.ops.cronUpdate, asyncRoute(async (req, res) => {
    const { id } = parseOrThrow(IdParam, req.params, 'path');
    res.json(await schedules.update(id, parseOrThrow(ScheduleBody, req.body, 'schedule')));
  }));
  r.on(api.ops.cronDelete, asyncRoute(async (req, res) => {
    const { id } = parseOrThrow(IdParam, req.params, 'path');
    await schedules.remove(id);
    res.json({ deleted: id });
  }));

  r.on(api.ops.backupList, asyncRoute(async (_req, res) => void res.json({ backups: await backups.list() })));
  r.on(api.ops.backupCreate, asyncRoute(async (req, res) => {
    const b = parseOrThrow(BackupStartBody, req.body ?? {}, 'backup');
    res.status(202).json(await backups.start({ passphrase: b.passphrase }));
  }));
  r.on(api.ops.backupRestore, asyncRoute(async (req, res) => {
    const q = parseOrThrow(RestoreQuery, req.query, 'query');
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
  }));
  r.on(api.ops.backupDownload, asyncRoute(async (req, res) => {
    const { id } = parseOrThrow(BackupIdParam!, req.params, 'path') as { id: string };
    const { path, fileName, size } = await backups.archivePath(id);
    res.setHeader('content-type', 'application/gzip');
    res.setHeader('content-length', String(size));
    res.setHeader('content-disposition', `attachment; filename="${fileName}"`);
    await pipeline(backups.openArchive(path), res);
  }));
  r.on(api.ops.backupDelete, asyncRoute(async (req, res) => {
    const { id } = parseOrThrow(BackupIdParam!, req.params, 'path') as { id: string };
    await backups.remove(id);
    res.json({ deleted: id });
  }));
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
