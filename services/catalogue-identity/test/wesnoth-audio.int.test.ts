/**
 * Identity on REAL audio (issue 4 "Tests"): Wesnoth Ogg tracks (Debian package wesnoth-1.16-music) and
 * their ffmpeg transcodes (MP3 128k, AAC 128k, Opus 96k, FLAC) are analysed with fpcalc and with each
 * embedder the worker can store, then resolved through the catalogue's HTTP API on real PostgreSQL with the
 * service's DEFAULT settings:
 *  - `dsp-v1` (the DSP embedder, always);
 *  - `tfjs:musicnn-fusion-v1` (issue 13: MusiCNN MSD + MTT at the worker's default patch budget fused with
 *    dsp-v1, exactly as the worker's track processor computes it, with the dsp-v1 vector sent as the
 *    alternate) when the MusiCNN weights are installed (MODELS_DIR, or ../shared/models beside the checkout);
 *    without them that half is skipped with a message. The catalogue serves the fusion version there, so the
 *    identity gate runs on the learned vectors with the same DEFAULT threshold (docs/musicnn.md, calibration).
 *
 * Expected: every transcode resolves to its original's id; no two different tracks share an id (the
 * subset holds the near-twins victory/victory2, defeat/defeat2, frantic/frantic-old); a copy trimmed by
 * 1.5 s splits.
 *
 * Subset (12 of the 41 tracks, 619 s of audio, documented to keep the file under 3 minutes on 2 cores):
 * the six near-twins plus the six next-shortest tracks with music (silence.ogg is skipped: it is 10 s of
 * silence, whose embedding carries no identity). Trimmed copies are made of four tracks whose trimmed
 * embedding stays close to the original (so the duration gate, not the embedding, must split them).
 * Each original sits in its own folder so the same-folder veto cannot hide a false merge between them;
 * copies live on other servers (one per format), as they would in a multi-server install.
 *
 * The embedder and fpcalc wrapper are imported from the analysis worker by relative path: test-only
 * (services never import each other in src). Every file is decoded and analysed once for all embedders.
 * The environment shares Float32Array with Node's realm so ONNX Runtime (the worker's MusiCNN runtime) loads
 * under Jest (see that file).
 * @jest-environment ./services/analysis-worker/src/domain/musicnn/__tests__/shared-typed-arrays-env.js
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeToPcm } from '../../analysis-worker/src/domain/audio/decode';
import { DefaultEmbedder } from '../../analysis-worker/src/domain/audio/embedder';
import { computeChromaprint } from '../../analysis-worker/src/domain/audio/chromaprint';
import { DEFAULT_MUSICNN_PATCHES, DEFAULT_MUSICNN_PRECISION } from '../../analysis-worker/src/config';
import { MusicnnAnalyser } from '../../analysis-worker/src/domain/musicnn/analyser';
import { FusionEmbedder } from '../../analysis-worker/src/domain/musicnn/embedding';
import { modelsPresent, testModelsDir } from '../../analysis-worker/src/domain/musicnn/__tests__/models';
import { cosineDistance } from '@polyphony/vectors';
import { computeSignature, hammingDistance } from '../src/domain/identity/signature';
import { startCatalogue, type StartedCatalogue } from './helpers';

const MUSIC = '/usr/share/games/wesnoth/1.16/data/core/music';
const TRACKS = ['victory', 'victory2', 'defeat', 'defeat2', 'frantic', 'frantic-old', 'elf-land', 'sad', 'transience', 'main_menu', 'battle-epic', 'revelation'];
const TRIMMED = new Set(['frantic-old', 'elf-land', 'sad', 'revelation']);
const FORMATS: Record<string, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '128k'],
  aac: ['-c:a', 'aac', '-b:a', '128k', '-f', 'mp4'],
  opus: ['-c:a', 'libopus', '-b:a', '96k', '-f', 'ogg'],
  flac: ['-c:a', 'flac'],
};
const EXT: Record<string, string> = { mp3: 'mp3', aac: 'm4a', opus: 'opus', flac: 'flac', trim: 'ogg' };

interface Analysed {
  track: string;
  version: 'orig' | 'mp3' | 'aac' | 'opus' | 'flac' | 'trim';
  path: string;
  embedding: Float32Array;
  durationSeconds: number;
  chromaprint: number[] | undefined;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}: ${err.slice(-300)}`))));
  });
}

async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** One embedder as the worker runs it: the stored vector, its version, and the alternate (dsp-v1) it sends with a learned one. */
interface WorkerEmbedder {
  version: string;
  embed(pcm: { samples: Float32Array; sampleRate: number }): Promise<{ embedding: Float32Array; alternate?: { embedderVersion: string; embedding: number[] } }>;
}

const dspV1 = async (): Promise<WorkerEmbedder> => {
  const dsp = new DefaultEmbedder();
  return { version: dsp.version, embed: async (pcm) => ({ embedding: dsp.embed(pcm.samples, pcm.sampleRate) }) };
};

/** MusiCNN MSD + MTT (worker default patch budget and precision) fused with dsp-v1: track-processor.ts's learned vector. */
const musicnnFusion = async (): Promise<WorkerEmbedder> => {
  const dsp = new DefaultEmbedder();
  const analyser = await MusicnnAnalyser.load({ modelsDir: testModelsDir(), maxPatches: DEFAULT_MUSICNN_PATCHES, precision: DEFAULT_MUSICNN_PRECISION });
  if (!analyser.hasMtt) throw new Error('the fusion embedding needs MTT_musicnn.h5 beside MSD_musicnn.h5');
  const fusion = new FusionEmbedder();
  return {
    version: fusion.version,
    embed: async (pcm) => {
      const base = dsp.embed(pcm.samples, pcm.sampleRate);
      const outputs = await analyser.analyse(pcm.samples);
      return { embedding: fusion.embedTrack(outputs, base), alternate: { embedderVersion: dsp.version, embedding: Array.from(base) } };
    },
  };
};

const haveAudio = existsSync(join(MUSIC, 'victory.ogg'));
const EMBEDDERS: Array<[string, () => Promise<WorkerEmbedder>]> = [
  ['dsp-v1', dspV1],
  ...(haveAudio && modelsPresent('wesnoth-audio (tfjs:musicnn-fusion-v1)') ? [['tfjs:musicnn-fusion-v1', musicnnFusion] as [string, () => Promise<WorkerEmbedder>]] : []),
];
const describeAudio = haveAudio ? describe.each(EMBEDDERS) : describe.skip.each(EMBEDDERS);

/** A decoded file with the vectors of every embedder under test (keyed by embedder name). */
interface AnalysedFile extends Omit<Analysed, 'embedding'> {
  vectors: Map<string, Awaited<ReturnType<WorkerEmbedder['embed']>> & { embedderVersion: string }>;
}

let corpus: Promise<AnalysedFile[]> | undefined;
let scratch: string | undefined;

/**
 * Transcodes the subset and analyses every file once (decode, fpcalc, each embedder of EMBEDDERS), shared by the
 * per-embedder suites so the MusiCNN half adds only its network time.
 */
function analyseCorpus(): Promise<AnalysedFile[]> {
  corpus ??= (async () => {
    const dir = (scratch = mkdtempSync(join(tmpdir(), 'catalogue-wesnoth-')));
    const embedders = await Promise.all(EMBEDDERS.map(async ([name, make]) => [name, await make()] as const));
    const files: AnalysedFile[] = [];
    const analyse = async (track: string, version: Analysed['version'], path: string) => {
      const [pcm, print] = await Promise.all([decodeToPcm(path), computeChromaprint(path).catch(() => undefined)]);
      const vectors: AnalysedFile['vectors'] = new Map();
      for (const [name, e] of embedders) vectors.set(name, { ...(await e.embed(pcm)), embedderVersion: e.version });
      files.push({ track, version, path, vectors, durationSeconds: pcm.durationSeconds, chromaprint: print ? Array.from(print.fingerprint) : undefined });
    };
    // Per track: transcode, then analyse every version; two tracks at a time (ffmpeg and fpcalc are child processes).
    await pool(TRACKS, 2, async (track) => {
      const src = join(MUSIC, `${track}.ogg`);
      const jobs: Array<[Analysed['version'], string, string[]]> = Object.entries(FORMATS).map(([f, args]) => [f as Analysed['version'], join(dir, `${track}.${EXT[f]}`), args]);
      if (TRIMMED.has(track)) {
        const total = (await decodeToPcm(src)).durationSeconds;
        jobs.push(['trim', join(dir, `${track}.trim.ogg`), ['-t', (total - 1.5).toFixed(3), '-c:a', 'libvorbis', '-q:a', '5']]);
      }
      await Promise.all(jobs.map(([, out, args]) => run('ffmpeg', ['-nostdin', '-v', 'error', '-y', '-i', src, ...args, out])));
      await analyse(track, 'orig', src);
      for (const [version, out] of jobs) await analyse(track, version, out);
    });
    return files;
  })();
  return corpus;
}

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describeAudio('identity on real audio with %s: Wesnoth tracks and their transcodes (PostgreSQL, default settings)', (name) => {
  let c: StartedCatalogue;
  const analysed: Analysed[] = [];
  const alternates = new Map<Analysed, { embedderVersion: string; embedding: number[] }>();
  let servedVersion: string | null = null;
  let expectedVersion = '';
  const ids = new Map<string, { itemId: string; outcome: string }>();
  const key = (a: Analysed) => `${a.track}:${a.version}`;

  beforeAll(async () => {
    const files = await analyseCorpus();
    const embedder = { version: files[0]!.vectors.get(name)!.embedderVersion };
    for (const f of files) {
      const { embedding, alternate } = f.vectors.get(name)!;
      const a: Analysed = { track: f.track, version: f.version, path: f.path, embedding, durationSeconds: f.durationSeconds, chromaprint: f.chromaprint };
      analysed.push(a);
      if (alternate) alternates.set(a, alternate);
    }

    c = await startCatalogue();
    const order: Array<Analysed['version']> = ['orig', 'mp3', 'aac', 'opus', 'flac', 'trim'];
    const sorted = [...analysed].sort((a, b) => order.indexOf(a.version) - order.indexOf(b.version) || TRACKS.indexOf(a.track) - TRACKS.indexOf(b.track));
    for (const a of sorted) {
      const server = a.version === 'orig' ? 'srv-orig' : `srv-${a.version}`;
      const res = await c
        .post('/internal/identity/resolve', {
          serverId: server,
          providerId: `${a.track}.${a.version}`,
          embedding: Array.from(a.embedding),
          embedderVersion: embedder.version,
          activeEmbedderVersion: embedder.version,
          ...(alternates.has(a) ? { alternateEmbeddings: [alternates.get(a)!] } : {}),
          durationSeconds: a.durationSeconds,
          chromaprint: a.chromaprint,
          metadata: { title: a.track, artist: 'Wesnoth', filePath: `/music/${server}/${a.track}/${a.track}.${a.version}` },
          descriptors: {},
        })
        .expect(200);
      ids.set(key(a), res.body);
    }
    servedVersion = ((await c.get('/internal/embedding/switch').expect(200)).body as { servedVersion: string | null }).servedVersion;
    expectedVersion = embedder.version;
  }, 600_000);

  afterAll(async () => {
    await c?.stop();
    await c?.db.drop();
  });

  const get = (track: string, version: Analysed['version']) => analysed.find((a) => a.track === track && a.version === version) as Analysed;
  const describePair = (a: Analysed, b: Analysed): string => {
    const sa = computeSignature(a.embedding);
    const sb = computeSignature(b.embedding);
    const hamming = sa.ok && sb.ok ? hammingDistance(sa.code, sb.code) : 'n/a';
    return `cos=${cosineDistance(a.embedding, b.embedding).toFixed(4)} hamming=${hamming} dDur=${(b.durationSeconds - a.durationSeconds).toFixed(2)}s`;
  };

  it('When every file is resolved, then the catalogue serves (and its identity gate compares) the vectors of the embedder under test', () => {
    expect(servedVersion).toBe(expectedVersion);
  });

  it('When the 12 originals are resolved, then each is new content with its own id (near-twins included)', () => {
    const originals = TRACKS.map((t) => ids.get(`${t}:orig`));
    expect(originals.every((r) => r?.outcome === 'new')).toBe(true);
    expect(new Set(originals.map((r) => r?.itemId)).size).toBe(TRACKS.length);
  });

  it('When MP3, AAC, Opus and FLAC transcodes are resolved on other servers, then every one maps to its original id', () => {
    const misses: string[] = [];
    for (const track of TRACKS) {
      const orig = get(track, 'orig');
      for (const version of ['mp3', 'aac', 'opus', 'flac'] as const) {
        const got = ids.get(`${track}:${version}`);
        const want = ids.get(`${track}:orig`);
        if (got?.itemId !== want?.itemId || got?.outcome !== 'existing') misses.push(`${track}.${version} split from its original (${describePair(orig, get(track, version))})`);
      }
    }
    expect(misses).toEqual([]);
  });

  it('When a copy is 1.5 s shorter, then it splits into its own id', () => {
    for (const track of TRIMMED) {
      const trimmed = ids.get(`${track}:trim`);
      expect(trimmed?.outcome).toBe('new');
      expect(trimmed?.itemId).not.toBe(ids.get(`${track}:orig`)?.itemId);
    }
  });

  it('When every file is resolved, then no id is shared by two different tracks (zero false merges)', () => {
    const tracksById = new Map<string, Set<string>>();
    for (const [k, r] of ids) {
      const track = k.split(':')[0] as string;
      if (!tracksById.has(r.itemId)) tracksById.set(r.itemId, new Set());
      tracksById.get(r.itemId)?.add(track);
    }
    const shared = [...tracksById.entries()].filter(([, tracks]) => tracks.size > 1).map(([id, tracks]) => `${id}: ${[...tracks].join(', ')}`);
    expect(shared).toEqual([]);
    for (const [a, b] of [['victory', 'victory2'], ['defeat', 'defeat2'], ['frantic', 'frantic-old']] as const) {
      expect(ids.get(`${a}:orig`)?.itemId).not.toBe(ids.get(`${b}:orig`)?.itemId);
    }
  });
});
