/**
 * What the registry's domain needs from its database, as ports implemented in `store/` (`*.repository.ts`).
 * Domain code imports these, never a store class. The ports used by one service alone stand next to it:
 * `ConfigStorePort` (config.service.ts), `SettingsStorePort` (settings.service.ts), `ScheduleStore` (schedule.service.ts).
 */
import type { BackupDto, TaskUpdatedEvent } from '@polyphony/contracts';
import type { ArchiveItem } from './backup-format';
import type { MusicServer } from './server';

/** A task on the board: the latest snapshot its owner published (times as Date). */
export interface TaskRecord extends Omit<TaskUpdatedEvent, 'startedAt' | 'finishedAt'> {
  startedAt?: Date;
  finishedAt?: Date;
  createdAt: Date;
  /** When a user asked to cancel it (the state stays the owner's until its snapshot says REVOKED). */
  cancelRequestedAt?: Date;
}

/** The task board (registry.tasks): the latest snapshot of every batch task, fed by `task.updated` events. */
export interface TaskBoardStore {
  /** Stores a snapshot unless a newer one (higher seq) is already stored. */
  upsert(e: TaskUpdatedEvent): Promise<void>;
  find(id: string): Promise<TaskRecord | undefined>;
  /** Tasks in NEW or RUNNING, newest first. */
  active(): Promise<TaskRecord[]>;
  /** Task history, newest first, optionally of one type prefix and one state. */
  history(f: { kind?: string; state?: string; limit: number }): Promise<TaskRecord[]>;
  /** The most recent task, if any. */
  last(): Promise<TaskRecord | undefined>;
  /** The most recent task of every type. */
  lastPerType(): Promise<TaskRecord[]>;
  /** Records a user's cancel request on a live task (its state stays the owner's). */
  requestCancel(id: string): Promise<void>;
}

/** A transaction holding the server registry's write lock; opaque to the domain (the store's own handle). */
export type ServerTx = object;

/** A media server to insert. */
export interface NewServer {
  name: string;
  type: string;
  creds: Record<string, string>;
  musicLibraries: string[];
  isDefault: boolean;
  changeDetection: MusicServer['changeDetection'];
}

/** The server registry (registry.music_servers). Writes run inside `write` (one transaction under one lock, so the default rules hold). */
export interface ServerStore {
  /** Every server, the default first, then by name. */
  list(): Promise<MusicServer[]>;
  /** By internal id (undefined for an id that is not a UUID or not stored); inside `tx` when given. */
  findById(id: string, tx?: ServerTx): Promise<MusicServer | undefined>;
  /** By internal id, or by display name (case-insensitive). */
  findByIdOrName(value: string): Promise<MusicServer | undefined>;
  findDefault(): Promise<MusicServer | undefined>;
  /** Runs `fn` in a transaction holding the registry's write lock; commits when it resolves. */
  write<T>(fn: (tx: ServerTx) => Promise<T>): Promise<T>;
  /** @throws ConflictError (409) when the name is taken */
  insert(tx: ServerTx, s: NewServer): Promise<MusicServer>;
  /** @throws ConflictError (409) when the name is taken or the row vanished */
  update(tx: ServerTx, id: string, s: Omit<NewServer, 'isDefault'>): Promise<MusicServer>;
  /** Moves the default flag to `id`. */
  setDefault(tx: ServerTx, id: string): Promise<void>;
  delete(tx: ServerTx, id: string): Promise<void>;
  count(tx?: ServerTx): Promise<number>;
  /** Removes the credential-less seed entry a fresh install starts with; returns how many. */
  deleteSeedEntries(tx: ServerTx): Promise<number>;
  /** Stores the counts the catalogue reports (null keeps the stored value). */
  setCounts(id: string, trackCount: number | null, matchedCount: number | null): Promise<void>;
}

/** A table in a backup: schema-qualified name and insertable columns (generated columns left out). */
export interface TableInfo {
  name: string;
  columns: string[];
}

/** Which values of the current install are secrets a restore keeps (the archive may lack them). */
export interface SecretPolicy {
  /** Key/value settings tables (schema.table) whose secret rows are kept. */
  settingsTables: readonly string[];
  /** Whether a settings key names a secret. */
  isSecretSetting(key: string): boolean;
  /** Keys of registry.music_servers.creds that are secrets. */
  credentialSecretKeys: readonly string[];
}

export interface RestoreHooks {
  /** Rewrites an archive row before it is inserted (secrets opened), or drops it (undefined). */
  transform(table: string, row: Record<string, unknown>): Record<string, unknown> | undefined;
  keep: SecretPolicy;
}

/** Reads tables inside one consistent snapshot (the backup's transaction). */
export interface BackupSnapshot {
  /** Applied migrations per application schema. */
  schemaVersions(): Promise<Record<string, string[]>>;
  /** Every table the backup holds, in restore order. */
  tables(): Promise<TableInfo[]>;
  /** A table's rows, streamed in batches of `batch`. */
  rows(table: string, batch?: number): AsyncIterable<Record<string, unknown>>;
}

/** Backup and restore of every application schema, and the backup catalogue (registry.backups). */
export interface BackupStorePort {
  /** Applied migrations per application schema of this install. */
  schemaVersions(): Promise<Record<string, string[]>>;
  /** Runs `fn` over one consistent snapshot of every table a backup holds. */
  snapshot<T>(fn: (read: BackupSnapshot) => Promise<T>): Promise<T>;
  /** Replaces every backed-up table with the archive's rows in one transaction (all or nothing). */
  restore(items: AsyncIterable<ArchiveItem>, hooks: RestoreHooks): Promise<{ tables: number; rows: number }>;
  insertBackup(b: { id: string; fileName: string; formatVersion: number; secrets: string; taskId: string }): Promise<void>;
  finishBackup(id: string, f: { status: 'ready' | 'failed'; sizeBytes?: number; sha256?: string; rows?: number; message: string }): Promise<void>;
  listBackups(): Promise<Array<BackupDto & { file_name: string }>>;
  deleteBackup(id: string): Promise<boolean>;
}
