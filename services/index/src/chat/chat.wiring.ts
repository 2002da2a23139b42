import type { ServiceRuntime } from '@polyphony/platform';
import type { AlchemyService } from '../alchemy/alchemy.service';
import type { ArtistService } from '../artists/artist.service';
import type { IndexState } from '../core/generation';
import type { ScopeDeps } from '../core/scope';
import { TagsUnavailableError, type SemanticService } from '../semantic/semantic.service';
import type { SearchService } from '../similarity/search.service';
import type { SimilarityService } from '../similarity/similarity.service';
import { PgChatCatalog } from './chat.repository';
import { chatRoutesRouter } from './chat.routes';
import { InstantPlaylistService, type AiSettingsSource } from './instant-playlist.service';

/** The features the chat's tools call. */
export interface ChatTools {
  similarity: SimilarityService;
  search: SearchService;
  alchemy: AlchemyService;
  artists: ArtistService;
  semantic: SemanticService;
}

/**
 * The chat feature (instant playlists, `/chat/api/*`): the interpreter and its tools over the other features;
 * the AI provider's settings are read from the registry through `aiSettings` on every request.
 * @returns the chat routes
 */
export function wireChat(rt: ServiceRuntime, state: IndexState, scopeDeps: ScopeDeps, tools: ChatTools, aiSettings: AiSettingsSource) {
  const { semantic } = tools;
  const instant = new InstantPlaylistService(
    {
      similarity: tools.similarity,
      search: tools.search,
      alchemy: tools.alchemy,
      artists: tools.artists,
      catalog: new PgChatCatalog(rt.ds),
      // The text/mood search tool; a library without learned tags answers it with no songs.
      text: {
        async search(scope, query, limit) {
          try {
            return (await semantic.textSearch(scope, query, limit)).results.map((r) => ({ item_id: r.item_id, title: r.title, author: r.author, album: r.album ?? null }));
          } catch (err) {
            if (err instanceof TagsUnavailableError) return [];
            throw err;
          }
        },
      },
    },
    aiSettings,
    rt.logger.child({ component: 'InstantPlaylist' }),
  );
  return chatRoutesRouter(instant, state, scopeDeps, rt.logger.child({ component: 'chat' }));
}
