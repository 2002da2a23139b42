import type { DataSource } from 'typeorm';
import type { SettingsStorePort, StoredSetting } from '../domain/settings.service';

/** registry.app_config as the settings store (source column: env import or admin edit). */
export class PgSettingsRepository implements SettingsStorePort {
  constructor(private readonly ds: DataSource) {}

  async read(keys: string[]): Promise<StoredSetting[]> {
    return this.ds.query(`SELECT key, value, source FROM registry.app_config WHERE key = ANY($1)`, [keys]);
  }

  async write(values: Record<string, string | null>): Promise<void> {
    await this.ds.transaction(async (m) => {
      for (const [key, value] of Object.entries(values)) {
        if (value === null) await m.query(`DELETE FROM registry.app_config WHERE key = $1`, [key]);
        else await m.query(`INSERT INTO registry.app_config (key, value, source) VALUES ($1, $2, 'database') ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, source = 'database', updated_at = now()`, [key, value]);
      }
    });
  }
}
