import { CreatePlaylist1732100000000 } from './1732100000000-CreatePlaylist';
import { CreatePlaylists1732100000001 } from './1732100000001-CreatePlaylists';

/** Migrations of the playlist schema, in order (registered explicitly, never globbed). */
export const playlistMigrations = [CreatePlaylist1732100000000, CreatePlaylists1732100000001];
