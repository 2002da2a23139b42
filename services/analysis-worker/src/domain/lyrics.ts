/**
 * Lyrics of new content and the backfill of songs analyzed before lyrics were kept (issue 14; reference
 * lyrics pipeline, reference-implementation.md 2.4, minus the external APIs and the speech model):
 * a song whose MusiCNN top tags (mood_vector, the 5 highest MSD tags) include "instrumental" is not looked
 * up (status instrumental, the reference's LYRICS_MUSICNN_SKIP); otherwise the media server's lyrics are
 * asked for (each client applies the 2.5 s timeout of MUSICSERVER_LYRICS_TIMEOUT) and the outcome is
 * stored once per song with its source: found (text), or none.
 */
import type { LearnedFeatures } from '@polyphony/contracts';
import type { MediaServerClient } from '@polyphony/media-servers';
import type { Logger } from '@polyphony/platform';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './ports';

/** True when "instrumental" is among the song's top MusiCNN tags (mood_vector). Unknown (no model) = false. */
export function isInstrumental(learned: LearnedFeatures | null | undefined): boolean {
  if (!learned) return false;
  return /(^|,)instrumental:/.test(learned.moodVector);
}

/**
 * Looks up and stores the lyrics of one song. A failed lookup (timeout, server error) stores nothing, so
 * the backfill asks again later; a lookup that answered "no lyrics" stores status none.
 * @returns the stored status, or 'error' when nothing was stored.
 */
export async function fetchAndStoreLyrics(
  catalogue: CataloguePort,
  client: MediaServerClient,
  serverId: string,
  providerId: string,
  itemId: string,
  instrumental: boolean,
  logger: Logger,
  hint: { artist?: string; title?: string } = {},
): Promise<'found' | 'none' | 'instrumental' | 'error'> {
  try {
    if (instrumental) {
      await catalogue.storeLyrics(itemId, { status: 'instrumental' });
      return 'instrumental';
    }
    let text: string | undefined;
    try {
      text = (await client.getLyrics(providerId, hint))?.trim() || undefined;
    } catch (err) {
      logger.warn('lyrics lookup failed', { serverId, providerId, err: (err as Error).message });
      return 'error';
    }
    if (text) {
      await catalogue.storeLyrics(itemId, { status: 'found', text: text.slice(0, 200_000), sourceServerId: serverId, sourceKind: client.type });
      return 'found';
    }
    await catalogue.storeLyrics(itemId, { status: 'none', sourceServerId: serverId, sourceKind: client.type });
    return 'none';
  } catch (err) {
    // Storing failed (catalogue down): the song stays pending for the backfill; the analysis goes on.
    logger.warn('lyrics not stored', { itemId, err: (err as Error).message });
    return 'error';
  }
}

/** Counts of one backfill pass. */
export interface LyricsBackfillReport {
  examined: number;
  found: number;
  none: number;
  instrumental: number;
  errors: number;
  remaining: number;
}

/**
 * Backfill of songs analyzed before lyrics were kept: pages through the catalogue's songs without a
 * lookup (GET /internal/lyrics/pending, keyset by item id) and looks each up on the first of its servers
 * that is configured (default server first). Resumable by construction: every stored outcome takes the
 * song off the work list, so a restarted backfill continues where the last one stopped; songs whose
 * lookup failed stay on it. `signal` stops between songs.
 */
export async function backfillLyrics(
  catalogue: CataloguePort,
  registry: RegistryPort,
  clientFactory: MediaClientFactory,
  logger: Logger,
  options: { pageSize?: number; signal?: AbortSignal; onProgress?: (r: LyricsBackfillReport) => void } = {},
): Promise<LyricsBackfillReport> {
  const servers = await registry.listServers();
  const order = new Map(servers.map((s, i) => [s.id, i]));
  const clients = new Map<string, MediaServerClient>();
  const clientOf = (id: string): MediaServerClient => {
    let c = clients.get(id);
    if (!c) {
      const info = servers.find((s) => s.id === id)!;
      c = clientFactory(info.connection);
      clients.set(id, c);
    }
    return c;
  };
  const report: LyricsBackfillReport = { examined: 0, found: 0, none: 0, instrumental: 0, errors: 0, remaining: 0 };
  let after: string | undefined;
  for (;;) {
    if (options.signal?.aborted) break;
    const page = await catalogue.pendingLyrics(after, options.pageSize ?? 200);
    report.remaining = page.remaining;
    for (const item of page.items) {
      if (options.signal?.aborted) break;
      report.examined++;
      const mapping = [...item.mappings].filter((m) => order.has(m.serverId)).sort((a, b) => order.get(a.serverId)! - order.get(b.serverId)!)[0];
      if (!mapping && !item.instrumental) {
        report.errors++;
        continue;
      }
      const outcome = mapping
        ? await fetchAndStoreLyrics(catalogue, clientOf(mapping.serverId), mapping.serverId, mapping.providerId, item.itemId, item.instrumental, logger, { artist: item.artist, title: item.title })
        : await catalogue.storeLyrics(item.itemId, { status: 'instrumental' }).then(() => 'instrumental' as const, () => 'error' as const);
      if (outcome === 'error') report.errors++;
      else report[outcome]++;
    }
    options.onProgress?.(report);
    if (!page.next) break;
    after = page.next;
  }
  report.remaining = (await catalogue.pendingLyrics(undefined, 1)).remaining;
  return report;
}
