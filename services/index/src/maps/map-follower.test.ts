/**
 * MapFollower (the index replicas' copy of the catalogue's mappings, issue 19): a log pruned past the replica makes
 * it reload every mapping once; a catalogue whose full set is itself behind its retention must not make it reload for
 * ever (the install restored a day after it was written spun at 100 % CPU in activation, session 19).
 */
import { buildIvfIndex, type IvfIndex } from '@polyphony/vector-engine';
import { createLogger } from '@polyphony/platform';
import { MapFollower, type MappingSource } from './generation-maps';

const DIM = 4;

async function smallIndex(ids = ['song-a', 'song-b', 'song-c']): Promise<IvfIndex> {
  const vectors = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]);
  return (await buildIvfIndex([{ ids, vectors }], { expectedCount: 3, nlist: 1, dim: DIM })).index;
}

/** A catalogue whose full set pages at `head` and whose log was pruned through `prunedThrough`. */
function source(head: number, prunedThrough: number): MappingSource & { rowsCalls: number } {
  const s = {
    rowsCalls: 0,
    async mappingRows() {
      s.rowsCalls++;
      return { seq: head, rows: [['srv', 'p-a', 'song-a'], ['srv', 'p-b', 'song-b']] as Array<[string, string, string]>, next: null };
    },
    async mappingChanges(after: number) {
      if (after < prunedThrough) return { reset: true, seq: after, more: false, changes: [] };
      return { reset: false, seq: after, more: false, changes: [] };
    },
  };
  return s as MappingSource & { rowsCalls: number };
}

const logger = createLogger({ service: 'map-follower-test', level: 'error' });

describe('MapFollower resets', () => {
  it('When the log was pruned past a replica that follows it, then it reloads every mapping once and follows from the new position', async () => {
    const index = await smallIndex();
    const src = source(50, 40);
    const follower = new MapFollower(src, logger, 1000);
    const maps = await follower.load(index);
    expect([src.rowsCalls, maps.seq]).toEqual([1, 50]);
    maps.seq = 10; // behind the retention now
    await follower.catchUp(maps);
    expect([src.rowsCalls, maps.seq, maps.summary()]).toEqual([2, 50, [{ serverId: 'srv', available: 2, mappings: 2 }]]);
  });

  it('When the full mapping set itself pages at a position behind the retention, then loading fails after its time-out instead of reloading for ever', async () => {
    const index = await smallIndex();
    const src = source(0, 40); // what a catalogue whose head ignored its pruning mark answered
    const follower = new MapFollower(src, logger, 300);
    await expect(follower.load(index)).rejects.toThrow(/reset again right after a full reload at seq 0/);
    // Each attempt is one fill plus one reload, then the error (backoff 0.2 s, 0.4 s within the 0.3 s budget).
    expect(src.rowsCalls).toBeLessThanOrEqual(6);
  });
});

describe('MapFollower.carry', () => {
  it('When a delta build carries the serving maps, then the kept rows keep their ids, the incoming ones are applied, a log pruned past the position read before the delta reloads in full, and a bad row map loads', async () => {
    const old = await smallIndex();
    const next = await smallIndex(['song-b', 'song-c', 'song-d']);
    const src = source(50, 40);
    const follower = new MapFollower(src, logger, 1000);
    const serving = await follower.load(old);
    // song-a left, song-b and song-c kept (rows 0, 1), song-d incoming with its mapping.
    const newRowOf = Int32Array.from([-1, 0, 1]);
    const carried = await follower.carry(serving, next, newRowOf, [['srv', 'p-d', 'song-d']], 45);
    expect(src.rowsCalls).toBe(1);
    expect([carried.rowOfProvider('srv', 'p-a'), carried.rowOfProvider('srv', 'p-b'), carried.rowOfProvider('srv', 'p-d'), carried.seq]).toEqual([-1, 0, 2, 45]);
    expect(serving.rowOfProvider('srv', 'p-a')).toBe(0);
    // Read before the delta at a position the log no longer holds: the carried maps reload every mapping.
    const reloaded = await follower.carry(serving, next, newRowOf, [['srv', 'p-d', 'song-d']], 10);
    expect(src.rowsCalls).toBe(2);
    expect([reloaded.rowOfProvider('srv', 'p-b'), reloaded.rowOfProvider('srv', 'p-d'), reloaded.seq]).toEqual([0, -1, 50]);
    // A row map that sends two rows to one is refused: the maps are loaded in full.
    const loaded = await follower.carry(serving, next, Int32Array.from([0, 0, 1]), [], 50);
    expect(src.rowsCalls).toBe(3);
    expect([loaded.rowOfProvider('srv', 'p-a'), loaded.rowOfProvider('srv', 'p-b')]).toEqual([-1, 0]);
  });
});
