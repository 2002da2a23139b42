import { createInterface } from 'node:readline';
import { FakePeers, syntheticLearned, syntheticSongs, toSnapshotTrack } from '@polyphony/testkit';

/**
 * Child process for the benchmarks: a FakePeers catalogue + registry with `songs` synthetic songs on three
 * servers, `srv-main` (every song, ids `m-<i>`), `srv-half` (every 2nd song, ids `h-<i>`) and `srv-sparse` (every `sparseEvery`-th song, ids
 * `<100000000 + i>`), so the peer's CPU and memory stay out of the measured service process.
 * Usage: node bench/dist/index/fake-peers-server.js <songs> [sparseEvery=100]
 * With FAKE_PEERS_LEARNED=1 every song carries learned features (`syntheticLearned`: MSD tags, mood_vector and
 * other_features strings of real length), so the index holds real-sized mood strings (memory benchmarks).
 * With FAKE_PEERS_JSON_ONLY=1 the snapshot is served as JSON whatever the caller accepts (a catalogue before the binary
 * page; before/after runs). With FAKE_PEERS_NO_CHANGE_FEED=1 there is no change feed (every build reads the full
 * snapshot: the rebuild before the delta snapshot). Prints one JSON line `{"url": ...}` once listening; exits when its stdin closes. A line
 * `grow <n>` on stdin adds the next n synthetic songs (index rebuild bench: a second build after the library grew, or
 * a live-library batch); the answer lists their ids when n <= 10,000.
 */
async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 100_000);
  const sparseEvery = Number(process.argv[3] ?? 100);
  const peers = new FakePeers();
  peers.binarySnapshot = process.env.FAKE_PEERS_JSON_ONLY !== '1';
  peers.changeFeed = process.env.FAKE_PEERS_NO_CHANGE_FEED !== '1';
  peers.addServer({ id: 'srv-main', name: 'Main', type: 'jellyfin', isDefault: true, connection: { type: 'jellyfin', creds: { url: 'http://127.0.0.1:9', user_id: '0'.repeat(32), token: 't' } } });
  peers.addServer({ id: 'srv-half', name: 'Half', type: 'emby', isDefault: false, connection: { type: 'emby', creds: { url: 'http://127.0.0.1:9', user_id: '0'.repeat(32), token: 't' } } });
  peers.addServer({ id: 'srv-sparse', name: 'Sparse', type: 'navidrome', isDefault: false, connection: { type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } } });
  const learned = process.env.FAKE_PEERS_LEARNED === '1';
  let i = 0;
  /** Ids of the songs the last `add` added (answered to `grow` when at most 10,000). */
  let added: string[] = [];
  // Songs [i, total) of the synthetic catalogue (the first `i` are skipped: same songs, same ids as a bigger run).
  const add = (total: number) => {
    added = [];
    let j = 0;
    for (const s of syntheticSongs(total, { songsPerArtist: 20, songsPerAlbum: 10, seed: 3 })) {
      if (j++ < i) continue;
      const { mappings: _unused, ...song } = toSnapshotTrack(s, [], learned ? syntheticLearned(i) : undefined);
      peers.addSong(song);
      added.push(s.itemId);
      const artist = s.artist.split(' ')[1]!;
      peers.map('srv-main', s.itemId, `m-${i}`, `ma-${artist}`);
      if (i % 2 === 0) peers.map('srv-half', s.itemId, `h-${i}`, `ha-${artist}`);
      if (i % sparseEvery === 0) peers.map('srv-sparse', s.itemId, String(100_000_000 + i), `sa-${artist}`);
      i++;
    }
  };
  add(songs);
  const url = await peers.start();
  process.stdout.write(`${JSON.stringify({ url, songs })}\n`);
  // A line `grow <n>` on stdin adds the next n songs of the synthetic catalogue (a library that grew between two
  // builds) and answers `{"grown": n, "songs": total}`.
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = /^grow (\d+)$/.exec(line.trim());
    if (!m) return;
    const before = i;
    add(i + Number(m[1]));
    process.stdout.write(`${JSON.stringify({ grown: i - before, songs: i, ...(added.length <= 10_000 ? { ids: added } : {}) })}\n`);
  });
  process.stdin.on('end', () => {
    void peers.stop().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
