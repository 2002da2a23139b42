/**
 * Import from the reference (issue 34; admin only, enforced by the gateway and here):
 * - `POST /api/import/audiomuse` with JSON `{connection_string, dry_run?}`, or a `pg_dump` file (plain SQL or
 *   custom format) as the body (application/octet-stream, streamed to disk, at most IMPORT_UPLOAD_LIMIT_BYTES;
 *   `?dry_run=true`). 202 `{task_id, task_type: 'import', status: 'NEW'}`; 400 for a body that is neither, 409
 *   while an import runs, 413 above the limit. Progress and the report: the task board and
 *   `GET /api/import/audiomuse/status` (`report`: counts per reference table, skipped rows with reasons, time).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { ImportStartBody, api } from '@polyphony/contracts';
import { AppError, ValidationError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { ReferenceImportService } from '../domain/reference-import/import.service';

/** Largest dump accepted as an upload (bytes). */
export const IMPORT_UPLOAD_LIMIT_BYTES = 8 * 1024 ** 3;

/** The import routes; uploads go to `uploadDir` (default `<tmp>/polyphony-import`). */
export function importRoutes(service: ReferenceImportService, uploadDir = join(tmpdir(), 'polyphony-import')): RouteHandlers {
  const r = routeHandlers();
  r.json(api.import.audiomuseStart, async ({ query }, req) => {
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    let started: { task_id: string };
    if (type === 'application/json') {
      const body = ImportStartBody.safeParse(req.body ?? {});
      if (!body.success) throw new ValidationError('Send {connection_string, dry_run?} as JSON, or the pg_dump file as an application/octet-stream body', body.error.issues);
      started = await service.startFromConnection(body.data.connection_string, body.data.dry_run ?? false);
    } else if (['application/octet-stream', 'application/sql', 'application/x-sql'].includes(type)) {
      await mkdir(uploadDir, { recursive: true, mode: 0o700 });
      const path = join(uploadDir, `${randomUUID()}.dump`);
      try {
        await receive(req, path, IMPORT_UPLOAD_LIMIT_BYTES);
      } catch (err) {
        await rm(path, { force: true });
        throw err;
      }
      started = await service.startFromDump(path, query.dry_run === 'true' || query.dry_run === '1');
    } else throw new ValidationError('Send {connection_string, dry_run?} as JSON, or the pg_dump file as an application/octet-stream body');
    return { ...started, task_type: 'import', status: 'NEW' };
  });
  r.json(api.import.audiomuseStatus, () => service.status());
  return r;
}

/** Streams the request body to `path`, refusing (413) more than `limit` bytes and an empty body (400). */
async function receive(req: NodeJS.ReadableStream, path: string, limit: number): Promise<void> {
  let seen = 0;
  const guard = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) cb(new AppError('payload_too_large', `Dump larger than ${limit} bytes`, 413));
      else cb(null, chunk);
    },
  });
  await pipeline(req, guard, createWriteStream(path, { mode: 0o600 }));
  if (seen === 0) throw new ValidationError('The upload is empty');
}
