import type { DataSource, QueryRunner } from 'typeorm';
import type { BackupDto } from '@polyphony/contracts';
import { queryRows } from '@polyphony/platform';
import type { ArchiveItem, TableHeader } from '../domain/backup-format';
import type { BackupSnapshot, BackupStorePort, RestoreHooks, SecretPolicy, TableInfo } from '../domain/ports';

/**
 * Tables a backup leaves out: derived data rebuilt after a restore (the index's generations,
 * projections and copies), run bookkeeping, queues, and the backup catalogue itself. Everything
 * else in every application schema (a schema with a `migrations` table) is in the archive, so a
 * table added by a later migration is backed up unless it is named here.
 */
export const BACKUP_EXCLUDED_TABLES = [
  'index.tracks',
  'index.builds',
  'index.cells',
  'index.quantisers',
  'index.cell_codes',
  'index.map_projections',
  'index.artist_profiles',
  'index.artist_links',
  'index.radio_runs',
  'index.replicas',
  'analysis.runs',
  'analysis.run_servers',
  'analysis.run_tracks',
  'catalogue.batch_task',
  // The mapping change log is written by triggers while the restore inserts mappings; the index
  // reloads its maps with the rebuild that follows a restore.
  'catalogue.mapping_log',
  'catalogue.mapping_log_state',
  // Sessions and login counters belong to this install's gateway, not to the archive.
  'auth.sessions',
  'auth.rate_limits',
  'playlist.clustering_runs',
  'registry.tasks',
  'registry.backups',
];


/** Low-level access for backup and restore: table discovery, one consistent snapshot, one restore transaction. */
export class PgBackupRepository implements BackupStorePort {
  constructor(private readonly ds: DataSource) {}

  /** Applied migrations per application schema. */
  async schemaVersions(runner: { query(sql: string, p?: unknown[]): Promise<unknown> } = this.ds): Promise<Record<string, string[]>> {
    const schemas = (await runner.query(`SELECT table_schema AS s FROM information_schema.tables WHERE table_name = 'migrations' AND table_schema NOT IN ('public','pg_catalog','information_schema') ORDER BY 1`)) as Array<{ s: string }>;
    const out: Record<string, string[]> = {};
    for (const { s } of schemas) out[s] = ((await runner.query(`SELECT name FROM ${ident(s)}.migrations ORDER BY id`)) as Array<{ name: string }>).map((r) => r.name);
    return out;
  }

  /**
   * Tables the backup holds, parents before children (foreign keys), with insertable columns.
   * Cross-schema references are honoured as well.
   */
  async tables(runner: { query(sql: string, p?: unknown[]): Promise<unknown> } = this.ds): Promise<TableInfo[]> {
    const schemas = Object.keys(await this.schemaVersions(runner));
    const rows = (await runner.query(
      `SELECT c.oid::bigint AS oid, n.nspname || '.' || c.relname AS name,
              array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum) AS columns
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r','p') AND n.nspname = ANY($1) AND c.relname <> 'migrations' AND NOT c.relispartition`,
      [schemas],
    )) as Array<{ oid: string; name: string; columns: string[] }>;
    const included = rows.filter((r) => !BACKUP_EXCLUDED_TABLES.includes(r.name));
    const byOid = new Map(included.map((r) => [String(r.oid), r]));
    const deps = (await runner.query(`SELECT conrelid::bigint AS child, confrelid::bigint AS parent FROM pg_constraint WHERE contype = 'f' AND conrelid <> confrelid`)) as Array<{ child: string; parent: string }>;
    const parents = new Map<string, string[]>();
    for (const d of deps) if (byOid.has(String(d.child)) && byOid.has(String(d.parent))) parents.set(String(d.child), [...(parents.get(String(d.child)) ?? []), String(d.parent)]);
    const ordered: TableInfo[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (oid: string) => {
      if (state.get(oid)) return;
      state.set(oid, 'visiting');
      for (const p of parents.get(oid) ?? []) visit(p);
      state.set(oid, 'done');
      const r = byOid.get(oid)!;
      ordered.push({ name: r.name, columns: r.columns });
    };
    for (const oid of [...byOid.keys()].sort((a, b) => byOid.get(a)!.name.localeCompare(byOid.get(b)!.name))) visit(oid);
    return ordered;
  }

  /**
   * Runs `fn` inside one REPEATABLE READ, READ ONLY transaction: every table read through the
   * given reader sees the same snapshot, across all schemas (PostgreSQL's consistent snapshot).
   */
  async snapshot<T>(fn: (read: SnapshotReader) => Promise<T>): Promise<T> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    try {
      await qr.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await fn(new SnapshotReader(qr, this));
      await qr.query('COMMIT');
      return result;
    } catch (err) {
      await qr.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await qr.release();
    }
  }

  /**
   * Replaces the contents of every backed-up table with the archive's, in one transaction: any
   * failure rolls everything back and the previous state stays intact. `transform` may rewrite a
   * row (secrets) or drop it (returns undefined). The current install's secrets named by `keep` (the
   * archive may have left them out) are read before the tables are emptied and put back afterwards
   * where the restored rows lack them.
   */
  async restore(items: AsyncIterable<ArchiveItem>, hooks: RestoreHooks): Promise<{ tables: number; rows: number }> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    try {
      await qr.query('BEGIN');
      const current = await this.tables(qr);
      const currentCols = new Map(current.map((t) => [t.name, t.columns]));
      const kept = await keepSecrets(qr, hooks.keep);
      if (current.length) await qr.query(`TRUNCATE ${current.map((t) => qname(t.name)).join(', ')} RESTART IDENTITY CASCADE`);
      let table: TableHeader | undefined;
      const tname = () => table!.table;
      let cols: string[] = [];
      let batch: Array<Record<string, unknown>> = [];
      let tables = 0;
      let rows = 0;
      const flush = async () => {
        if (!table || !batch.length || !cols.length) return (batch = []);
        const list = cols.map(ident).join(', ');
        await qr.query(`INSERT INTO ${qname(tname())} (${list}) OVERRIDING SYSTEM VALUE SELECT ${list} FROM json_populate_recordset(NULL::${qname(tname())}, $1::json)`, [JSON.stringify(batch)]);
        rows += batch.length;
        batch = [];
      };
      for await (const item of items) {
        if (item.kind === 'table') {
          await flush();
          const have = currentCols.get(item.table.table);
          table = have ? item.table : undefined;
          // Columns both in the archive and here: a column added by a later migration takes its default.
          cols = have ? item.table.columns.filter((c) => have.includes(c)) : [];
          if (have) tables++;
          continue;
        }
        if (!table) continue;
        const row = hooks.transform(table.table, item.row);
        if (row) batch.push(row);
        if (batch.length >= 1000) await flush();
      }
      await flush();
      await restoreKeptSecrets(qr, kept, hooks.keep);
      for (const t of current) await resetSequences(qr, t);
      await qr.query('COMMIT');
      return { tables, rows };
    } catch (err) {
      await qr.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await qr.release();
    }
  }

  async insertBackup(b: { id: string; fileName: string; formatVersion: number; secrets: string; taskId: string }): Promise<void> {
    await this.ds.query(`INSERT INTO registry.backups (id, file_name, format_version, secrets, task_id) VALUES ($1, $2, $3, $4, $5)`, [b.id, b.fileName, b.formatVersion, b.secrets, b.taskId]);
  }

  async finishBackup(id: string, f: { status: 'ready' | 'failed'; sizeBytes?: number; sha256?: string; rows?: number; message: string }): Promise<void> {
    await this.ds.query(`UPDATE registry.backups SET status = $2, size_bytes = $3, sha256 = $4, rows = $5, message = $6, finished_at = now() WHERE id = $1`, [id, f.status, f.sizeBytes ?? null, f.sha256 ?? null, f.rows ?? null, f.message.slice(0, 2000)]);
  }

  async listBackups(): Promise<Array<BackupDto & { file_name: string }>> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(`SELECT * FROM registry.backups ORDER BY created_at DESC`);
    return rows.map((r) => ({
      id: String(r.id),
      file_name: String(r.file_name),
      created_at: (r.created_at as Date).toISOString(),
      finished_at: r.finished_at ? (r.finished_at as Date).toISOString() : null,
      status: String(r.status),
      size_bytes: r.size_bytes === null ? null : Number(r.size_bytes),
      sha256: (r.sha256 as string | null) ?? null,
      format_version: Number(r.format_version),
      secrets: String(r.secrets),
      rows: r.rows === null ? null : Number(r.rows),
      message: String(r.message),
      task_id: (r.task_id as string | null) ?? null,
    }));
  }

  async deleteBackup(id: string): Promise<boolean> {
    return (await queryRows(this.ds, `DELETE FROM registry.backups WHERE id = $1 RETURNING id`, [id])).length > 0;
  }

  /** Marks backups left `running` by a process that died as failed (called at start). */
  async failAbandoned(): Promise<void> {
    await this.ds.query(`UPDATE registry.backups SET status = 'failed', message = 'interrupted (the process stopped while writing)', finished_at = now() WHERE status = 'running'`);
  }
}



/** Secret setting rows and credential secrets of the current install, read before a restore empties the tables. */
interface KeptSecrets {
  settings: Array<{ table: string; key: string; value: string }>;
  creds: Array<{ id: string; creds: Record<string, string> }>;
}

async function keepSecrets(qr: QueryRunner, policy: SecretPolicy): Promise<KeptSecrets> {
  const settings: KeptSecrets['settings'] = [];
  for (const table of policy.settingsTables) {
    const exists = (await qr.query(`SELECT to_regclass($1) AS t`, [table])) as Array<{ t: string | null }>;
    if (!exists[0]?.t) continue;
    const rows = (await qr.query(`SELECT key, value FROM ${qname(table)}`)) as Array<{ key: string; value: string }>;
    for (const r of rows) if (policy.isSecretSetting(r.key)) settings.push({ table, key: r.key, value: r.value });
  }
  const creds = (await qr.query(`SELECT id::text AS id, creds FROM registry.music_servers`)) as KeptSecrets['creds'];
  return { settings, creds };
}

async function restoreKeptSecrets(qr: QueryRunner, kept: KeptSecrets, policy: SecretPolicy): Promise<void> {
  for (const s of kept.settings) await qr.query(`INSERT INTO ${qname(s.table)} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, [s.key, s.value]);
  for (const c of kept.creds) {
    const secrets = Object.fromEntries(Object.entries(c.creds).filter(([k]) => policy.credentialSecretKeys.includes(k)));
    if (!Object.keys(secrets).length) continue;
    // Only fills keys the restored row lacks (an archive without secrets), never overrides restored ones.
    await qr.query(`UPDATE registry.music_servers SET creds = $2::jsonb || creds WHERE id::text = $1`, [c.id, JSON.stringify(secrets)]);
  }
}

/** Reads tables inside the backup's snapshot transaction. */
export class SnapshotReader implements BackupSnapshot {
  constructor(
    private readonly qr: QueryRunner,
    private readonly store: PgBackupRepository,
  ) {}

  schemaVersions(): Promise<Record<string, string[]>> {
    return this.store.schemaVersions(this.qr);
  }

  tables(): Promise<TableInfo[]> {
    return this.store.tables(this.qr);
  }

  /** Streams a table's rows (as row_to_json objects) in batches of `batch` through a cursor. */
  async *rows(table: string, batch = 1000): AsyncGenerator<Record<string, unknown>> {
    const cursor = `backup_${Math.random().toString(36).slice(2, 10)}`;
    await this.qr.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS j FROM ${qname(table)} t`);
    try {
      for (;;) {
        const rows = (await this.qr.query(`FETCH ${batch} FROM ${cursor}`)) as Array<{ j: string }>;
        if (!rows.length) break;
        for (const r of rows) yield JSON.parse(r.j) as Record<string, unknown>;
      }
    } finally {
      await this.qr.query(`CLOSE ${cursor}`);
    }
  }
}

async function resetSequences(qr: QueryRunner, t: TableInfo): Promise<void> {
  for (const col of t.columns) {
    const [seq] = (await qr.query(`SELECT pg_get_serial_sequence($1, $2) AS s`, [qname(t.name), col])) as Array<{ s: string | null }>;
    if (!seq?.s) continue;
    await qr.query(`SELECT setval($1, COALESCE((SELECT max(${ident(col)}) FROM ${qname(t.name)}), 0) + 1, false)`, [seq.s]);
  }
}

/** Quotes an identifier (names come from the catalogue, but quote anyway). */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
function qname(schemaTable: string): string {
  const [s, t] = schemaTable.split('.');
  return `${ident(s!)}.${ident(t!)}`;
}
