import { settingsTableMigration } from '@polyphony/platform';

/** playlist schema: service settings (seeded from the environment on first start). */
export const CreatePlaylist1732100000000 = settingsTableMigration('playlist', 'CreatePlaylist1732100000000');
