import { CreatePlaylist1732100000000 } from './1732100000000-CreatePlaylist';
import { CreatePlaylists1732100000001 } from './1732100000001-CreatePlaylists';
import { RadioPlaylists1732900000000 } from './1732900000000-RadioPlaylists';
import { ClusteringRunLeases1733400000000 } from './1733400000000-ClusteringRunLeases';
import { AlbumOfTheWeekPlaylists1733900000000 } from './1733900000000-AlbumOfTheWeekPlaylists';
import { PlaylistOwners1734340000001 } from './1734340000001-PlaylistOwners';

/** Migrations of the playlist schema, in order (registered explicitly, never globbed). */
export const playlistMigrations = [CreatePlaylist1732100000000, CreatePlaylists1732100000001, RadioPlaylists1732900000000, ClusteringRunLeases1733400000000, AlbumOfTheWeekPlaylists1733900000000, PlaylistOwners1734340000001];
