import { isMediaServerError } from '@polyphony/media-servers';
import { NotFoundError, UpstreamUnavailableError, ValidationError, type Logger } from '@polyphony/platform';
import type { MediaServerClient } from '@polyphony/media-servers';
import type { CataloguePort, MediaClientFactory, PlaylistAccount, PlaylistStore, RegistryPort, TrackTitle, WrittenPlaylist, WrittenTrack } from './ports';
import { deletePlaylistOnServer } from './clustering.service';
import { RADIO_SUFFIX } from '@polyphony/contracts';

/** Suffix of every playlist written by create_playlist (reference implementation naming). */
export const INSTANT_SUFFIX = '_instant';

/** Outcome of {@link PlaylistService.createInstant}. */
export interface InstantPlaylistResult {
  serverId: string;
  serverName: string;
  /** The provider's id of the new playlist. */
  playlistId: string;
  /** Name as written on the server (`<name>_instant`). */
  name: string;
  /** Tracks written, in the caller's order (provider ids of the server). */
  written: WrittenTrack[];
  /** Whose account holds it: the caller's own linked account (`user`, private here) or the server's. */
  account: PlaylistAccount;
  /** The caller's ids that are not on the server (dropped, never sent), in the caller's order. */
  unavailable: string[];
}

/** One server's entry of GET /api/playlists. */
export interface ServerPlaylists {
  serverId: string;
  serverName: string;
  isDefault: boolean;
  /** Playlist name -> tracks as `{itemId: provider id on that server, title, author}`. */
  playlists: Record<string, Array<{ itemId: string; title: string; author: string }>>;
}

/**
 * Playlists written on demand (spec: Selecting a server at runtime 4-7). Every id is first resolved by
 * the catalogue's input resolver (a provider id of the selected server becomes its canonical id;
 * canonical and unknown ids pass through), then the canonical ids are translated by the output mapping
 * to the selected server's provider ids. Ids with no mapping on that server are dropped and counted,
 * never sent with a foreign id. The playlist is created on that server and recorded as ours.
 */
export class PlaylistService {
  /** The replacement of each radio / Album of the Week playlist in progress (key: server, kind, name), see {@link replaceRadio}. */
  private readonly replacing = new Map<string, Promise<void>>();

  constructor(
    private readonly repo: PlaylistStore,
    private readonly registry: RegistryPort,
    private readonly catalogue: CataloguePort,
    private readonly clientFactory: MediaClientFactory,
    private readonly logger: Logger,
  ) {}

  /**
   * Creates `<name>_instant` on the selected server with the given tracks (duplicates of one song kept once).
   * Households (issue 34): with `userId` (a signed-in user) and that user's own linked account on the server,
   * the playlist is written with that account and recorded as private to the user; otherwise with the
   * server's account, visible to everyone here, as before.
   * @param serverId the gateway-resolved server; undefined when no server is configured.
   * @throws ValidationError (400) without a server, for an unknown server, or when no track is on it.
   * @throws UpstreamUnavailableError (502) when the media server fails or answers without a playlist id.
   */
  async createInstant(serverId: string | undefined, name: string, ids: readonly string[], userId?: string): Promise<InstantPlaylistResult> {
    if (!serverId) throw new ValidationError('No media server is configured');
    const server = await this.registry.getServerForUser(serverId, userId);
    if (!server) throw new ValidationError('Invalid server selection.');
    const canonical = await this.catalogue.resolveInput(server.id, ids);
    const firstInput = new Map<string, string>();
    canonical.forEach((c, i) => {
      if (!firstInput.has(c)) firstInput.set(c, ids[i]!);
    });
    const toProvider = await this.catalogue.mapOutput(server.id, [...firstInput.keys()]);
    const written: WrittenTrack[] = [];
    const unavailable: string[] = [];
    for (const [itemId, input] of firstInput) {
      const providerId = toProvider.get(itemId);
      if (providerId === undefined) unavailable.push(input);
      else written.push({ itemId, providerId });
    }
    if (written.length === 0) throw new ValidationError(`None of the ${firstInput.size} track(s) is available on server "${server.name}"`);

    const fullName = `${name}${INSTANT_SUFFIX}`;
    let playlistId: string;
    try {
      const created = await this.clientFactory(server.connection).createPlaylist(fullName, written.map((t) => t.providerId));
      playlistId = created.id;
    } catch (err) {
      const reason = isMediaServerError(err) || err instanceof TypeError ? err.message : 'unexpected error';
      throw new UpstreamUnavailableError(`Media server "${server.name}" did not create the playlist: ${reason}`, 502, { cause: err });
    }
    if (!playlistId) throw new UpstreamUnavailableError(`Media server "${server.name}" returned no playlist id`, 502);

    const titles = await this.titlesOrEmpty(written.map((t) => t.itemId));
    for (const t of written) {
      const known = titles.get(t.itemId);
      t.title = known?.title ?? null;
      t.author = known?.author ?? null;
    }
    await this.repo.record({ serverId: server.id, providerPlaylistId: playlistId, name: fullName, kind: 'instant', tracks: written, ownerUserId: userId, account: server.account });
    this.logger.info('instant playlist created', { serverId: server.id, playlistId, tracks: written.length, unavailable: unavailable.length, account: server.account });
    return { serverId: server.id, serverName: server.name, playlistId, name: fullName, written, unavailable, account: server.account };
  }

  /**
   * Replaces the radio playlist `<name>_radio` on one server (radio runs of the index service): the ids are
   * resolved and mapped as in `createInstant` (ids not on the server dropped), every playlist recorded as a
   * radio of that exact name on that server is deleted there (one already gone counts as deleted) and
   * forgotten, then the new one is created and recorded (kind `radio`). User playlists are never touched:
   * only our records are consulted. With `kind` `album_of_the_week` (issue 31) the same happens to the playlist
   * named exactly `name` (no suffix) recorded as an Album of the Week: one fixed playlist per server, emptied
   * and refilled by every run. Households (issue 34): with `userId` (a radio's creator) and that user's own linked
   * account on the server, the radio is written with that account and recorded as private to the user; a playlist
   * of the same name recorded earlier is deleted with the account that wrote it.
   * Replacements of the same playlist (server, kind, name) run one after the other in this process (the service runs
   * one replica, k8s/playlist.yaml): two overlapping ones (an Album of the Week firing and a direct run, or a retried
   * call) would both find the old playlist, both delete it and both create one, leaving two playlists of the one name.
   * @throws ValidationError (400) for an unknown server or when no track is on it; UpstreamUnavailableError (502)
   */
  replaceRadio(
    serverId: string,
    name: string,
    ids: readonly string[],
    runId?: string,
    kind: 'radio' | 'album_of_the_week' = 'radio',
    userId?: string,
  ): Promise<{ playlistId: string; name: string; written: number; replaced: number; account: PlaylistAccount }> {
    const key = `${serverId}\u0000${kind}\u0000${name.toLowerCase()}`;
    const previous = this.replacing.get(key) ?? Promise.resolve();
    const run = previous.then(
      () => this.replaceRadioNow(serverId, name, ids, runId, kind, userId),
      () => this.replaceRadioNow(serverId, name, ids, runId, kind, userId),
    );
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.replacing.set(key, settled);
    void settled.then(() => {
      if (this.replacing.get(key) === settled) this.replacing.delete(key);
    });
    return run;
  }

  /** {@link replaceRadio} itself, once no other replacement of the same playlist runs. */
  private async replaceRadioNow(
    serverId: string,
    name: string,
    ids: readonly string[],
    runId: string | undefined,
    kind: 'radio' | 'album_of_the_week',
    userId: string | undefined,
  ): Promise<{ playlistId: string; name: string; written: number; replaced: number; account: PlaylistAccount }> {
    // Households: a radio of a user is written with that user's linked account when there is one (else the server's)
    const server = await this.registry.getServerForUser(serverId, kind === 'radio' ? userId : undefined);
    if (!server) throw new ValidationError(`Unknown server ${serverId}`);
    const canonical = await this.catalogue.resolveInput(server.id, ids);
    const unique = [...new Set(canonical)];
    const toProvider = await this.catalogue.mapOutput(server.id, unique);
    const written: WrittenTrack[] = unique.flatMap((itemId) => {
      const providerId = toProvider.get(itemId);
      return providerId === undefined ? [] : [{ itemId, providerId }];
    });
    if (written.length === 0) throw new ValidationError(`None of the ${unique.length} track(s) is available on server "${server.name}"`);
    const fullName = kind === 'radio' ? `${name}${RADIO_SUFFIX}` : name;
    const client = this.clientFactory(server.connection);
    let replaced = 0;
    let playlistId: string;
    try {
      for (const old of await this.repo.listByServerAndKind(server.id, kind)) {
        if (old.name.toLowerCase() !== fullName.toLowerCase()) continue;
        await this.deleteRecorded(old, server.account === 'user' ? userId : undefined, client);
        await this.repo.remove(old.id);
        replaced++;
      }
      playlistId = (await client.createPlaylist(fullName, written.map((t) => t.providerId))).id;
    } catch (err) {
      const reason = isMediaServerError(err) || err instanceof TypeError ? err.message : 'unexpected error';
      throw new UpstreamUnavailableError(`Media server "${server.name}" did not write the radio playlist: ${reason}`, 502, { cause: err });
    }
    if (!playlistId) throw new UpstreamUnavailableError(`Media server "${server.name}" returned no playlist id`, 502);
    const titles = await this.titlesOrEmpty(written.map((t) => t.itemId));
    for (const t of written) {
      t.title = titles.get(t.itemId)?.title ?? null;
      t.author = titles.get(t.itemId)?.author ?? null;
    }
    const owner = server.account === 'user' ? userId : undefined;
    await this.repo.record({ serverId: server.id, providerPlaylistId: playlistId, name: fullName, kind, runId, tracks: written, ownerUserId: owner, account: server.account });
    this.logger.info(`${kind === 'radio' ? 'radio' : 'album of the week'} playlist written`, { serverId: server.id, playlistId, name: fullName, tracks: written.length, replaced, account: server.account });
    return { playlistId, name: fullName, written: written.length, replaced, account: server.account };
  }

  /**
   * Deletes a playlist we recorded with the account that wrote it: a user's playlist with that user's linked account
   * (asked again). When that user has unlinked the account meanwhile, the registry falls back to the server's account,
   * which may not be allowed to delete another account's playlist: that refusal is logged and the record forgotten
   * (the playlist stays in the user's account, theirs to delete), so the radio is not stuck failing on every run.
   */
  private async deleteRecorded(old: WrittenPlaylist, currentOwner: string | undefined, currentClient: MediaServerClient): Promise<void> {
    const oldOwner = old.account === 'user' ? (old.ownerUserId ?? undefined) : undefined;
    if (oldOwner === currentOwner) return deletePlaylistOnServer(currentClient, old.providerPlaylistId);
    const conn = await this.registry.getServerForUser(old.serverId, oldOwner);
    const client = conn ? this.clientFactory(conn.connection) : currentClient;
    try {
      await deletePlaylistOnServer(client, old.providerPlaylistId);
    } catch (err) {
      const lostAccount = old.account === 'user' && conn?.account !== 'user';
      if (!lostAccount || !isMediaServerError(err) || (err.kind !== 'permission_denied' && err.kind !== 'bad_credentials' && err.kind !== 'protocol')) throw err;
      this.logger.warn('old playlist of an unlinked account not deleted; record forgotten', { serverId: old.serverId, playlistId: old.providerPlaylistId, err: err.message });
    }
  }

  /**
   * The playlists this service wrote, per configured server (default first, then registry order).
   * Track ids are the provider ids written to that server; titles come from the catalogue, falling
   * back to those recorded at write time when the lookup is unavailable. Two of our playlists with
   * the same name on one server are listed as `name`, `name (2)`, ... oldest first. Playlists written with a
   * user's own account are listed to that user (`viewer`) only.
   */
  async listWritten(viewer?: string): Promise<ServerPlaylists[]> {
    const servers = [...(await this.registry.listServers())].sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
    const records = await this.repo.listWithTracks(viewer);
    const titles = await this.titlesOrEmpty(records.flatMap((p) => p.tracks.map((t) => t.itemId)));
    return servers.map((s) => {
      // A Map, then own properties only: a name such as `__proto__` or `constructor` stays an ordinary key.
      const playlists = new Map<string, ServerPlaylists['playlists'][string]>();
      for (const p of records.filter((r) => r.serverId === s.id)) {
        let key = p.name;
        for (let i = 2; playlists.has(key); i++) key = `${p.name} (${i})`;
        playlists.set(
          key,
          p.tracks.map((t) => {
            const fresh = titles.get(t.itemId);
            return { itemId: t.providerId, title: fresh?.title ?? t.title ?? '', author: fresh?.author ?? t.author ?? '' };
          }),
        );
      }
      return { serverId: s.id, serverName: s.name, isDefault: s.isDefault, playlists: Object.fromEntries(playlists) };
    });
  }

  /**
   * The canonical ids of a playlist this service wrote on a server (by provider playlist id or name, see
   * PlaylistStore.trackIdsOf), for alchemy items of type playlist and exports; a playlist private to a user is
   * found for that `viewer` only.
   * @throws NotFoundError (404) when this service wrote no such playlist there (or it is another user's)
   */
  async trackIdsOf(serverId: string, playlist: string, viewer?: string): Promise<{ name: string; itemIds: string[] }> {
    const found = await this.repo.trackIdsOf(serverId, playlist, viewer);
    if (!found) throw new NotFoundError(`No playlist "${playlist}" written by this service on that server`);
    return found;
  }

  /** Forgets our records of a server deleted from the registry (its playlists went with it). */
  async forgetServer(serverId: string): Promise<number> {
    return this.repo.removeServer(serverId);
  }

  private async titlesOrEmpty(itemIds: string[]): Promise<Map<string, TrackTitle>> {
    if (itemIds.length === 0) return new Map();
    try {
      return await this.catalogue.lookupTitles(itemIds);
    } catch (err) {
      this.logger.warn('track titles unavailable from the catalogue', { err: (err as Error).message });
      return new Map();
    }
  }
}
