import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BackupDto, TaskUpdatedEvent } from '@polyphony/contracts';
import { ConflictError, NotFoundError, ValidationError, type Logger } from '@polyphony/platform';
import { ArchiveReader, ArchiveWriter, BACKUP_FORMAT, BACKUP_FORMAT_VERSION, CREDENTIAL_SECRET_KEYS, SECRET_SETTING, SecretCipher, type BackupHeader } from './backup-format';
import type { BackupStorePort } from './ports';

/** Where task snapshots go (the registry's own task board). */
export interface TaskBoardWriter {
  upsert(e: TaskUpdatedEvent): Promise<void>;
  active(): Promise<Array<{ taskId: string; type: string }>>;
}

export interface BackupOptions {
  dir: string;
  appVersion: string;
  /** Asks the index service for a full rebuild after a restore; returns its task id when it has one. */
  requestIndexRebuild: () => Promise<string | null>;
}

const FILE_SUFFIX = '.polyphony-backup.gz';

/**
 * Backups and restores of everything the user owns (songs, embeddings of every version, tags,
 * lyrics, mappings, servers, settings, schedules, anchors, radios, playlist metadata, users with
 * password hashes) as one consistent snapshot across every schema. Archives are written to the
 * backup volume through a temporary name and renamed when complete, so a listed `ready` backup is
 * always whole. Restore is all or nothing, and the index is rebuilt afterwards.
 */
export class BackupService {
  /** The backup or restore in progress in this process (claimed synchronously, see `claim`). */
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: BackupStorePort,
    private readonly tasks: TaskBoardWriter,
    private readonly options: BackupOptions,
    private readonly logger: Logger,
  ) {}

  list(): Promise<BackupDto[]> {
    return this.store.listBackups().then((rows) => rows.map(({ file_name: _f, ...dto }) => dto));
  }

  /**
   * Starts a backup in the background; returns its ids at once (202). With a passphrase, secret
   * values are kept encrypted; without, they are left out. `keep` (scheduled backups) deletes the
   * oldest ready backups beyond that many once this one is complete.
   */
  async start(opts: { passphrase?: string; keep?: number } = {}): Promise<{ backup_id: string; task_id: string }> {
    const release = this.claim();
    const id = `${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').toLowerCase()}-${randomUUID().slice(0, 8)}`;
    const taskId = randomUUID();
    const fileName = `${id}${FILE_SUFFIX}`;
    const secrets = opts.passphrase ? 'encrypted' : 'excluded';
    try {
      await this.store.insertBackup({ id, fileName, formatVersion: BACKUP_FORMAT_VERSION, secrets, taskId });
      await this.report(taskId, 'backup', 'RUNNING', 0, 'Backup started', 1);
    } catch (err) {
      release();
      throw err;
    }
    void this.write(id, fileName, taskId, opts)
      .catch((err: unknown) => this.logger.error('backup failed', { backupId: id, error: (err as Error).message }))
      .finally(release);
    return { backup_id: id, task_id: taskId };
  }

  /**
   * Claims this process's one backup/restore slot before the first await, so concurrent requests
   * cannot both pass the check (409 for the losers). Each job holds a snapshot or restore
   * connection and needs a second one for its progress; several at once could take the whole
   * pool and wait on each other. Returns the release function.
   */
  private claim(): () => void {
    if (this.running) throw new ConflictError('A backup or restore is already running');
    let done!: () => void;
    this.running = new Promise<void>((resolve) => (done = resolve));
    return () => {
      this.running = undefined;
      done();
    };
  }

  /** Waits for a backup or restore in progress (tests, shutdown). */
  async idle(): Promise<void> {
    await this.running;
  }

  private async write(id: string, fileName: string, taskId: string, opts: { passphrase?: string; keep?: number }): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o700 });
    const tmp = join(this.options.dir, `.${fileName}.partial`);
    const writer = new ArchiveWriter(tmp);
    try {
      const cipher = opts.passphrase ? SecretCipher.create(opts.passphrase) : undefined;
      const sha256 = await this.store.snapshot(async (read) => {
        const header: BackupHeader = { format: BACKUP_FORMAT, version: BACKUP_FORMAT_VERSION, createdAt: new Date().toISOString(), appVersion: this.options.appVersion, schemas: await read.schemaVersions(), secrets: cipher ? 'encrypted' : 'excluded', kdf: cipher?.kdf };
        await writer.header(header);
        const tables = await read.tables();
        let done = 0;
        for (const t of tables) {
          await writer.table({ table: t.name, columns: t.columns });
          for await (const row of read.rows(t.name)) {
            const sealed = sealRow(t.name, row, cipher);
            if (sealed) await writer.row(sealed);
          }
          done++;
          await this.report(taskId, 'backup', 'RUNNING', Math.min(99, Math.round((done / tables.length) * 100)), `Backed up ${t.name}`, done + 1);
        }
        return writer.finish();
      });
      await rename(tmp, join(this.options.dir, fileName));
      const size = (await stat(join(this.options.dir, fileName))).size;
      await this.store.finishBackup(id, { status: 'ready', sizeBytes: size, sha256, rows: writer.rows, message: `${writer.rows} rows in ${writer.tables} tables` });
      await this.report(taskId, 'backup', 'SUCCESS', 100, `Backup ${id} ready: ${writer.rows} rows, ${size} bytes`, 10_000);
      this.logger.info('backup written', { backupId: id, rows: writer.rows, bytes: size });
      if (opts.keep) await this.prune(opts.keep);
    } catch (err) {
      await writer.abort();
      await rm(tmp, { force: true });
      const message = `Backup failed: ${(err as Error).message}`;
      await this.store.finishBackup(id, { status: 'failed', message }).catch(() => undefined);
      await this.report(taskId, 'backup', 'FAIL', 100, message, 10_000).catch(() => undefined);
      this.logger.error('backup failed', { backupId: id, error: (err as Error).message });
    }
  }

  /** Deletes the oldest ready backups beyond `keep` (retention of scheduled backups). */
  async prune(keep: number): Promise<number> {
    const ready = (await this.store.listBackups()).filter((b) => b.status === 'ready');
    let removed = 0;
    for (const b of ready.slice(keep)) {
      await this.remove(b.id);
      removed++;
    }
    return removed;
  }

  /** Path of a ready archive (404 when unknown or not ready). */
  async archivePath(id: string): Promise<{ path: string; fileName: string; size: number }> {
    const b = (await this.store.listBackups()).find((x) => x.id === id);
    if (!b || b.status !== 'ready') throw new NotFoundError(`Backup ${id} not found`);
    const path = join(this.options.dir, b.file_name);
    try {
      return { path, fileName: b.file_name, size: (await stat(path)).size };
    } catch {
      throw new NotFoundError(`Backup ${id} is listed but its file is missing from the backup volume`);
    }
  }

  openArchive(path: string) {
    return createReadStream(path);
  }

  async remove(id: string): Promise<void> {
    const b = (await this.store.listBackups()).find((x) => x.id === id);
    if (!b) throw new NotFoundError(`Backup ${id} not found`);
    if (b.status === 'running') throw new ConflictError(`Backup ${id} is still being written`);
    await rm(join(this.options.dir, b.file_name), { force: true });
    await this.store.deleteBackup(id);
  }

  /** A temporary path on the backup volume for an uploaded archive. */
  async uploadPath(): Promise<string> {
    const dir = join(this.options.dir, 'uploads');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return join(dir, `${randomUUID()}.upload.gz`);
  }

  /**
   * Restores an archive (a stored backup's file or an upload) all or nothing. Checks format,
   * version, checksum, schema compatibility and the passphrase before changing anything
   * (ValidationError 400); refuses while a task runs (409). Secrets the archive left out are kept
   * from the current install (same server id, same setting key). Then requests an index rebuild.
   */
  async restore(path: string, passphrase?: string): Promise<{ tables: number; rows: number; index_rebuild_task_id: string | null }> {
    const release = this.claim();
    try {
      return await this.restoreClaimed(path, passphrase);
    } finally {
      release();
    }
  }

  private async restoreClaimed(path: string, passphrase?: string): Promise<{ tables: number; rows: number; index_rebuild_task_id: string | null }> {
    const reader = new ArchiveReader(path);
    const header = await reader.verify();
    const current = await this.store.schemaVersions();
    for (const [schema, names] of Object.entries(header.schemas)) {
      const here = current[schema] ?? [];
      const unknown = names.filter((n) => !here.includes(n));
      if (unknown.length) throw new ValidationError(`Backup was made by a newer version (schema ${schema} has migrations this install lacks: ${unknown.join(', ')}); upgrade first`);
    }
    let cipher: SecretCipher | undefined;
    if (header.secrets === 'encrypted' && header.kdf) {
      if (!passphrase) throw new ValidationError('This backup keeps its secrets encrypted: give the passphrase it was made with');
      cipher = SecretCipher.open(passphrase, header.kdf);
    }
    const live = (await this.tasks.active()).filter((t) => t.type !== 'restore');
    if (live.length) throw new ConflictError(`A ${live[0]!.type} task is running; cancel it or wait before restoring`);
    const taskId = randomUUID();
    await this.report(taskId, 'restore', 'RUNNING', 0, 'Restore started', 1);
    const job = (async () => {
      const result = await this.store.restore(reader.items(), {
        transform: (table, row) => openRow(table, row, cipher),
        keep: KEEP_SECRETS,
      });
      this.logger.info('backup restored', { createdAt: header.createdAt, ...result });
      let rebuild: string | null = null;
      try {
        rebuild = await this.options.requestIndexRebuild();
      } catch (err) {
        this.logger.warn('index rebuild after restore could not be requested; run it from the UI', { error: (err as Error).message });
      }
      await this.report(taskId, 'restore', 'SUCCESS', 100, `Restored ${result.rows} rows in ${result.tables} tables`, 10_000);
      return { ...result, index_rebuild_task_id: rebuild };
    })();
    try {
      return await job;
    } catch (err) {
      await this.report(taskId, 'restore', 'FAIL', 100, `Restore failed, nothing changed: ${(err as Error).message}`, 10_000).catch(() => undefined);
      throw err;
    }
  }

  private async report(taskId: string, type: 'backup' | 'restore', state: TaskUpdatedEvent['state'], progress: number, message: string, seq: number): Promise<void> {
    const now = new Date().toISOString();
    await this.tasks.upsert({ taskId, type, owner: 'registry', state, progress, message, servers: [], log: [message], details: {}, seq, startedAt: state === 'RUNNING' && seq === 1 ? now : undefined, finishedAt: state === 'RUNNING' ? undefined : now });
  }
}

const SETTINGS_TABLES = ['auth.settings', 'registry.app_config', 'registry.settings'];

/** The secrets a restore keeps from the current install when the archive lacks them. */
const KEEP_SECRETS = { settingsTables: SETTINGS_TABLES, isSecretSetting: (key: string) => SECRET_SETTING.test(key), credentialSecretKeys: CREDENTIAL_SECRET_KEYS };

/** Seals a row's secrets for the archive (encrypted, or removed without a cipher); undefined drops the row. */
function sealRow(table: string, row: Record<string, unknown>, cipher: SecretCipher | undefined): Record<string, unknown> | undefined {
  if (SETTINGS_TABLES.includes(table) && typeof row.key === 'string' && SECRET_SETTING.test(row.key)) {
    return cipher ? { ...row, value: { $enc: cipher.encrypt(String(row.value)) } } : undefined;
  }
  if (row.creds && typeof row.creds === 'object') {
    const creds = { ...(row.creds as Record<string, unknown>) };
    for (const k of CREDENTIAL_SECRET_KEYS) {
      if (creds[k] === undefined || creds[k] === null || creds[k] === '') continue;
      if (cipher) creds[k] = { $enc: cipher.encrypt(String(creds[k])) };
      else delete creds[k];
    }
    return { ...row, creds };
  }
  return row;
}

/** Opens sealed values of an archive row (the inverse of sealRow). */
function openRow(table: string, row: Record<string, unknown>, cipher: SecretCipher | undefined): Record<string, unknown> | undefined {
  const open = (v: unknown): unknown => {
    if (v && typeof v === 'object' && '$enc' in (v as object)) {
      if (!cipher) throw new ValidationError('Backup archive holds encrypted values but its header says secrets are excluded');
      return cipher.decrypt(String((v as { $enc: string }).$enc));
    }
    return v;
  };
  if (SETTINGS_TABLES.includes(table) && 'value' in row) return { ...row, value: open(row.value) };
  if (row.creds && typeof row.creds === 'object') return { ...row, creds: Object.fromEntries(Object.entries(row.creds as Record<string, unknown>).map(([k, v]) => [k, open(v)])) };
  return row;
}
