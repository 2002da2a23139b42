/**
 * Throughput of the fake media servers over a 100,000-track synthetic catalogue: each fake is
 * paged through with its own protocol (the page sizes the provider clients use) and the wall time,
 * pages and resident memory are printed. Run: `npm run build && node bench/dist/testkit/fakes-100k.js [n]`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { syntheticCatalogue, createFakeEmby, createFakeJellyfin, createFakeLyrion, createFakePlex, createFakeSubsonic } from '@polyphony/testkit';

type Pager = (url: string) => Promise<{ tracks: number; pages: number }>;

async function getJson(url: string, init?: RequestInit): Promise<any> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 100_000);
  const catalogue = syntheticCatalogue(n, { audioFile: '/dev/null' });
  const jf = createFakeJellyfin({ catalogue });
  const emby = createFakeEmby({ catalogue });
  const sub = createFakeSubsonic({ catalogue });
  const lms = createFakeLyrion({ catalogue });
  const plex = createFakePlex({ catalogue });

  const mbPager = (path: (url: string) => string, headers: Record<string, string>): Pager => async (url) => {
    let start = 0;
    let pages = 0;
    let tracks = 0;
    for (;;) {
      const body = await getJson(`${path(url)}?IncludeItemTypes=Audio&Recursive=true&Fields=Path,DateCreated,MediaSources&SortBy=SortName&SortOrder=Ascending&StartIndex=${start}&Limit=500`, { headers });
      pages++;
      tracks += body.Items.length;
      start += body.Items.length;
      if (body.Items.length === 0 || start >= body.TotalRecordCount) return { tracks, pages };
    }
  };
  const kinds: Array<{ name: string; fake: { start(): Promise<{ url: string; close(): Promise<void> }> }; page: Pager }> = [
    { name: 'jellyfin', fake: jf, page: mbPager((u) => `${u}/Items`, { Authorization: `MediaBrowser Token="${jf.token}"` }) },
    { name: 'emby', fake: emby, page: mbPager((u) => `${u}/emby/Users/${emby.userId}/Items`, { 'X-Emby-Token': emby.token }) },
    {
      name: 'navidrome',
      fake: sub,
      page: async (url) => {
        let pages = 0;
        let tracks = 0;
        for (let offset = 0; ; offset += 500) {
          const s = randomBytes(6).toString('hex');
          const t = createHash('md5').update(`sesame${s}`).digest('hex');
          const body = await getJson(`${url}/rest/search3.view?u=alice&t=${t}&s=${s}&v=1.16.1&c=bench&f=json&query=&songCount=500&songOffset=${offset}&artistCount=0&albumCount=0`);
          const songs = body['subsonic-response'].searchResult3.song ?? [];
          pages++;
          tracks += songs.length;
          if (songs.length < 500) return { tracks, pages };
        }
      },
    },
    {
      name: 'lyrion',
      fake: lms,
      page: async (url) => {
        let pages = 0;
        let tracks = 0;
        for (let start = 0; ; ) {
          const body = await getJson(`${url}/jsonrpc.js`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ id: 1, method: 'slim.request', params: ['', ['titles', start, 500, 'tags:asleduyROAf']] }),
          });
          const loop = body.result.titles_loop ?? [];
          pages++;
          tracks += loop.length;
          start += loop.length;
          if (loop.length === 0 || start >= body.result.count) return { tracks, pages };
        }
      },
    },
    {
      name: 'plex',
      fake: plex,
      page: async (url) => {
        let pages = 0;
        let tracks = 0;
        for (const key of catalogue.libraries.map((l) => plex.sectionKeyOf(l.id))) {
          for (let start = 0; ; ) {
            const body = await getJson(`${url}/library/sections/${key}/all?type=10`, {
              headers: { 'X-Plex-Token': plex.token, Accept: 'application/json', 'X-Plex-Container-Start': String(start), 'X-Plex-Container-Size': '1000' },
            });
            const items = body.MediaContainer.Metadata ?? [];
            pages++;
            tracks += items.length;
            start += items.length;
            if (items.length === 0 || start >= body.MediaContainer.totalSize) break;
          }
        }
        return { tracks, pages };
      },
    },
  ];

  console.log(`fake media servers, synthetic catalogue of ${n} tracks (node ${process.version})`);
  for (const k of kinds) {
    const server = await k.fake.start();
    try {
      const cold = Date.now();
      const first = await k.page(server.url);
      const coldMs = Date.now() - cold;
      const warm = Date.now();
      await k.page(server.url);
      const warmMs = Date.now() - warm;
      if (first.tracks !== n) throw new Error(`${k.name}: enumerated ${first.tracks} of ${n}`);
      const rssMb = Math.round(process.memoryUsage().rss / 1024 / 1024);
      console.log(
        `${k.name.padEnd(10)} tracks=${first.tracks} pages=${first.pages} first=${coldMs} ms (${Math.round(n / (coldMs / 1000))} tracks/s) second=${warmMs} ms rss=${rssMb} MiB`,
      );
    } finally {
      await server.close();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
