import { settingsTableMigration } from '@polyphony/platform';

/** catalogue schema: service settings (seeded from the environment on first start). */
export const CreateCatalogue1732100000000 = settingsTableMigration('catalogue', 'CreateCatalogue1732100000000');
