import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MusicnnMelFrontend, toPatches } from './mel-frontend';

/** First `seconds` of a file as 16 kHz mono float32 through ffmpeg (the decoder's own downmix/resample). */
function decode16k(file: string, seconds: number): Float32Array {
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-t', String(seconds), '-i', file, '-vn', '-ac', '1', '-ar', '16000', '-f', 'f32le', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`ffmpeg failed on ${file}: ${r.stderr.toString()}`);
  const b = r.stdout;
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

function wesnothTracks(): string[] {
  const r = spawnSync('dpkg', ['-L', 'wesnoth-1.16-music'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter((l) => l.endsWith('.ogg')).sort() : [];
}

describe(`${MusicnnMelFrontend.name} on real music`, () => {
  const tracks = wesnothTracks().slice(0, 3);

  it('When Wesnoth tracks are decoded with ffmpeg, then the log-mel matches the numpy reference within 1e-5', () => {
    expect(tracks.length).toBe(3);
    const dir = mkdtempSync(join(tmpdir(), 'musicnn-mel-int-'));
    try {
      const frontend = new MusicnnMelFrontend();
      for (const [i, track] of tracks.entries()) {
        const pcm = decode16k(track, 20);
        expect(pcm.length).toBeGreaterThan(16000 * 10);
        const input = join(dir, `t${i}.f32`);
        writeFileSync(input, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
        const r = spawnSync('python3', [join(__dirname, '__fixtures__', 'musicnn_mel_reference.py'), input, join(dir, `t${i}`)], { encoding: 'utf8' });
        expect(r.stderr).toBe('');
        const b = readFileSync(join(dir, `t${i}.mel.f64`));
        const ref = new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
        const spec = frontend.logMel(pcm);
        expect(spec.data.length).toBe(ref.length);
        expect(toPatches(spec).count).toBeGreaterThanOrEqual(3);
        let diff = 0;
        for (let k = 0; k < ref.length; k++) diff = Math.max(diff, Math.abs(spec.data[k]! - ref[k]!));
        expect(diff).toBeLessThan(1e-5);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
