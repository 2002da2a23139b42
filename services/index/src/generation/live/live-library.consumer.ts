import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle } from '@polyphony/platform';
import type { LiveLibraryService } from './live-library.service';

/**
 * `analysis.track.completed.v1` with an item id (outcome `analyzed` or `mapped_existing`) -> the song is noted for the
 * live library's next batch (`LiveLibraryService.noteAdded`; debounced). A shared work queue: one replica batches and
 * stores each song; every replica then applies the stored batch (index.delta.applied.v1 on its own queue). The message
 * is acked once noted: a replica that stops before its flush leaves those songs to the next full rebuild.
 */
export function consumeLiveLibrary(bus: Bus, live: LiveLibraryService): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.analysisTrackCompleted, {
    queue: 'index.live-library',
    prefetch: 16,
    handler: async (event) => {
      if (event.itemId && (event.outcome === 'analyzed' || event.outcome === 'mapped_existing')) live.noteAdded(event.itemId);
    },
  });
}
