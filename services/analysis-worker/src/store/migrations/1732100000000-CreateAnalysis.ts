import { settingsTableMigration } from '@polyphony/platform';

/** analysis schema: service settings (seeded from the environment on first start). */
export const CreateAnalysis1732100000000 = settingsTableMigration('analysis', 'CreateAnalysis1732100000000');
