import { join } from 'node:path';
import { loadServiceConfig, parseConfig, readEnv, type ServiceConfig } from '@polyphony/platform';
import { SETTINGS, z } from '@polyphony/contracts';
import { LEGACY_MEDIA_KEYS } from './domain/config.service';
import { RETIRED_SCHEDULE_KEYS } from './domain/default-schedules';

/** Keys imported from the environment on first start: every setting, TZ, and retired keys still converted once (default-schedules.ts). */
export const GENERAL_CONFIG_KEYS = [...new Set(['TZ', ...SETTINGS.map((s) => s.key), ...RETIRED_SCHEDULE_KEYS])];

export interface RegistryConfig extends ServiceConfig {
  /** Raw environment subset for first-start seeding and the legacy migration. */
  seedEnv: Record<string, string | undefined>;
  /** Directory of backup archives (a persistent volume in containers). */
  backupDir: string;
  /** Scheduler pass interval, milliseconds (schedules have a one-second resolution). */
  schedulerTickMs: number;
}

const OpsEnv = z.object({
  BACKUP_DIR: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  SCHEDULER_TICK_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
});

/** Registry configuration: connection settings, first-start seed values, backup directory, scheduler interval. */
export function loadRegistryConfig(env: Record<string, string | undefined> = readEnv()): RegistryConfig {
  const base = loadServiceConfig('registry', 'registry', env);
  const ops = parseConfig(OpsEnv, env);
  const seedEnv: Record<string, string | undefined> = {};
  for (const k of [...GENERAL_CONFIG_KEYS, ...LEGACY_MEDIA_KEYS]) seedEnv[k] = env[k];
  return { ...base, seedEnv, backupDir: ops.BACKUP_DIR ?? join(ops.DATA_DIR, 'backups'), schedulerTickMs: ops.SCHEDULER_TICK_MS };
}
