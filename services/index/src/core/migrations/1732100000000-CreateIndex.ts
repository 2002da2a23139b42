import { settingsTableMigration } from '@polyphony/platform';

/** index schema: service settings (seeded from the environment on first start). */
export const CreateIndex1732100000000 = settingsTableMigration('index', 'CreateIndex1732100000000');
