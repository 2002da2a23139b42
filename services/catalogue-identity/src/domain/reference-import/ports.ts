import type { ImportTableCount } from '@polyphony/contracts';
import type { ImportPlan, Skips } from './plan';
import type { ReferenceSource } from './source';

/** What the writer did (or, in a dry run, would do). */
export interface ReferenceImportResult {
  /** Per reference table. */
  tables: Record<string, ImportTableCount>;
  /** Reference server id -> polyphony server id. */
  servers: Record<string, string>;
  /** Polyphony servers whose mappings the import may have changed. */
  touchedServers: string[];
}

/**
 * Applies a plan in one transaction (store/reference-import.repository.ts); a dry run rolls it back, and so does a
 * run that `stopped()` says must stop (cancel, lease lost, shutdown) when checked before the commit.
 */
export interface ReferenceImportStore {
  apply(plan: ImportPlan, skips: Skips, dryRun: boolean, stopped?: () => boolean): Promise<ReferenceImportResult>;
}

/** Opens the sources (store/reference-source.ts). */
export interface ReferenceSourceFactory {
  connection(connectionString: string): Promise<ReferenceSource>;
  dump(path: string): Promise<ReferenceSource>;
}
