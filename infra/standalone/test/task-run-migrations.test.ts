import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { analysisMigrations } from '@polyphony/analysis-worker';
import { catalogueMigrations } from '@polyphony/catalogue-identity';
import { indexMigrations } from '@polyphony/index';
import { playlistMigrations } from '@polyphony/playlist';

/**
 * The migrations that create or change a task-run table take their SQL from the platform's one
 * migration helper (shared/platform/src/tasks/schema.ts). Migrations that already ran must issue the
 * same statements as before, or a fresh install and an upgraded one would differ: this compares the
 * SQL every such migration sends (up and down, in order) with the text recorded from the migrations
 * as they were before the helper existed (task-run-migrations.sql.json), byte for byte.
 */

type Migration = new () => { up(q: unknown): Promise<void>; down(q: unknown): Promise<void> };

/** The statements a migration direction sends (parameters appended as JSON). */
async function recordedSql(M: Migration, direction: 'up' | 'down'): Promise<string[]> {
  const sql: string[] = [];
  const runner = {
    query: async (text: string, params?: unknown[]) => {
      sql.push(text + (params ? ` -- ${JSON.stringify(params)}` : ''));
      return [];
    },
  };
  await new M()[direction](runner);
  return sql;
}

const recorded = JSON.parse(readFileSync(join(__dirname, 'task-run-migrations.sql.json'), 'utf8')) as Record<string, string[]>;
const lists: Record<string, Migration[]> = { analysisMigrations, catalogueMigrations, indexMigrations, playlistMigrations };

describe('task-run migrations', () => {
  const cases = Object.keys(recorded).map((key) => key.split('/') as [string, string, 'up' | 'down']);

  it('records both directions of seven migrations', () => {
    expect(cases).toHaveLength(14);
  });

  it.each(cases)('When %s %s runs %s, then it sends exactly the recorded SQL', async (list, name, direction) => {
    const M = lists[list]!.find((m) => m.name === name);
    expect(M).toBeDefined();
    expect(await recordedSql(M!, direction)).toEqual(recorded[`${list}/${name}/${direction}`]);
  });
});
