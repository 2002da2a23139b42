import { CreatePlaylist1732100000000 } from './1732100000000-CreatePlaylist';
import { CreatePlaylists1732100000001 } from './1732100000001-CreatePlaylists';
import { RadioPlaylists1732900000000 } from './1732900000000-RadioPlaylists';

/** Migrations of the playlist schema, in order (registered explicitly, never globbed). */
export const playlistMigrations = [CreatePlaylist1732100000000, CreatePlaylists1732100000001, RadioPlaylists1732900000000];
