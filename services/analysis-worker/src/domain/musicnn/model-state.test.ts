import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@polyphony/platform';
import { LearnedModel } from './model-state';

const logger = createLogger({ service: 'test', level: 'error' });

describe('learned model fallback', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'models-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('When MODELS_DIR is not set, then there is no analyser and the status says why and how to install', async () => {
    const m = new LearnedModel(undefined, 16, logger);
    await m.load();
    expect(m.analyser).toBeUndefined();
    expect(m.status()).toMatchObject({ status: 'missing', model: null, reason: 'MODELS_DIR is not set' });
    expect(m.status().howToInstall).toContain('scripts/setup.sh');
    // Without the model nothing changes: the worker stores dsp-v1 vectors and asks no song to be re-analysed.
    expect(m.status().embedderVersion).toBe('dsp-v1');
    expect(m.fusion).toBeUndefined();
    expect(m.target()).toBeUndefined();
  });

  it('When the model file is absent, then status is missing with the expected path', async () => {
    const m = new LearnedModel(dir, 16, logger);
    expect(m.status().status).toBe('loading');
    await m.load();
    expect(m.analyser).toBeUndefined();
    expect(m.status().status).toBe('missing');
    expect(m.status().reason).toContain(join(dir, 'musicnn', 'MSD_musicnn.h5'));
  });

  it('When the model file has the wrong content, then status is error (sha256 named) and analysis falls back', async () => {
    mkdirSync(join(dir, 'musicnn'));
    writeFileSync(join(dir, 'musicnn', 'MSD_musicnn.h5'), 'not a model');
    const m = new LearnedModel(dir, 16, logger);
    await m.load();
    expect(m.analyser).toBeUndefined();
    expect(m.status().status).toBe('error');
    expect(m.status().reason).toContain('expected 412a832c');
    expect(m.status().embedderVersion).toBe('dsp-v1');
    expect(m.target()).toBeUndefined();
  });
});
