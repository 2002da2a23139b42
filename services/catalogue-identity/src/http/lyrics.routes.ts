/**
 * Lyrics and content-count endpoints of the catalogue (the owner of the lyrics texts and of the mappings):
 *
 * - POST /api/lyrics/search/text `{query (3-500 chars), limit 1-500 (50)}` -> `{query, count, results:[{item_id,
 *   title, author, album, album_artist, score, snippet}]}` on the server the gateway resolved (its provider
 *   ids; songs not mapped there never appear); nothing matching is a 200 with `count: 0, results: []`, as
 *   the reference answers (issue 30: a radio tool raises on a 404, the Lyrion plugin reads an empty list as
 *   "no match"); 400 on a short query or a limit outside 1-500.
 * - PUT /internal/tracks/:itemId/lyrics (service callers): the outcome of one lookup; 204, 404 unknown song.
 * - GET /internal/lyrics/pending?after=&limit=1-1000: songs without a lookup (the backfill's work list).
 * - POST /internal/lyrics/similar: TF-IDF lyrics neighbours of a song on a server (SemGrove).
 * - GET /internal/stats: content counts of the dashboard.
 */
import { LYRICS_DEFAULT_LIMIT, semanticRoutes, type LyricsSearchResponse, api } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { LyricsService } from '../domain/lyrics.service';

/** The lyrics routes (public search and internal). */
export function lyricsRoutes(lyrics: LyricsService): RouteHandlers {
  const r = routeHandlers();

  r.json(semanticRoutes.lyricsSearch, async ({ body }, req) => {
    const hits = await lyrics.search(req.identity?.serverId, body.query, body.limit ?? LYRICS_DEFAULT_LIMIT);
    return {
      query: body.query,
      count: hits.length,
      results: hits.map((h) => ({
        item_id: h.providerId,
        title: h.title,
        author: h.artist,
        album: h.album,
        album_artist: h.albumArtist,
        score: Math.round((h.score / (1 + h.score)) * 1e6) / 1e6,
        snippet: h.snippet,
      })),
    } satisfies LyricsSearchResponse;
  });
  r.json(api.internal.trackLyrics, async ({ params: { itemId }, body }, _req, res) => {
    await lyrics.put(itemId, body);
    res.status(204).end();
  });
  r.json(api.internal.lyricsPending, ({ query: q }) => lyrics.pending(q.after, q.limit));
  r.json(api.internal.lyricsSimilar, ({ body }) => lyrics.similar(body.itemId, body.serverId, body.limit));
  r.json(api.internal.catalogueStats, () => lyrics.stats());
  return r;
}
