import { CHANGE_DETECTION_DEFAULT } from '@polyphony/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import type { ConfigMigrationTx, ConfigRow, ConfigStorePort } from '../domain/config.service';
import type { ServerStore } from '../domain/ports';

/** registry.app_config as the general config store, and the first-start migration's transaction. */
export class PgConfigRepository implements ConfigStorePort {
  constructor(
    private readonly ds: DataSource,
    private readonly servers: ServerStore,
  ) {}

  read(keys?: readonly string[]): Promise<ConfigRow[]> {
    return readRows(this.ds, keys);
  }

  async set(key: string, value: string): Promise<void> {
    await this.ds.query(`INSERT INTO registry.app_config (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, [key, value]);
  }

  /** One transaction holding the advisory lock the server registry's writers take. */
  migrate<T>(fn: (tx: ConfigMigrationTx) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('polyphony-registry-servers'))`);
      return fn(this.migrationTx(m));
    });
  }

  private migrationTx(m: EntityManager): ConfigMigrationTx {
    return {
      envImported: async () => ((await m.query(`SELECT 1 FROM registry.settings WHERE key = 'env_imported'`)) as unknown[]).length > 0,
      markEnvImported: async () => {
        await m.query(`INSERT INTO registry.settings (key, value) VALUES ('env_imported', now()::text) ON CONFLICT DO NOTHING`);
      },
      importEnvValue: async (key, value) => {
        await m.query(`INSERT INTO registry.app_config (key, value, source) VALUES ($1, $2, 'env') ON CONFLICT (key) DO NOTHING`, [key, value]);
      },
      read: (keys) => readRows(m, keys),
      delete: async (keys) => {
        await m.query(`DELETE FROM registry.app_config WHERE key = ANY($1)`, [keys]);
      },
      serverCount: () => this.servers.count(m),
      insertServer: (s) => this.servers.insert(m, { ...s, changeDetection: { mode: CHANGE_DETECTION_DEFAULT.mode, intervalSeconds: CHANGE_DETECTION_DEFAULT.interval_seconds, pushTokenSha256: null } }),
    };
  }
}

async function readRows(m: EntityManager | DataSource, keys?: readonly string[]): Promise<ConfigRow[]> {
  if (keys === undefined) return m.query(`SELECT key, value FROM registry.app_config ORDER BY key`);
  return m.query(`SELECT key, value FROM registry.app_config WHERE key = ANY($1) ORDER BY key`, [keys]);
}
