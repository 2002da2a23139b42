import { UpstreamUnavailableError, ValidationError, type PeerClient } from '@polyphony/platform';
import { ServerResolver } from './server-resolver';

const MAIN = { id: 'srv-main', name: 'Main', server_type: 'navidrome' };

/** A registry stand-in whose answer the test switches; counts calls and can hold them. */
function registry() {
  const state = { mode: 'up' as 'up' | 'down' | 'refuse', calls: 0, gate: undefined as Promise<void> | undefined };
  const peer = {
    call: async () => {
      state.calls++;
      if (state.gate) await state.gate;
      if (state.mode === 'down') throw new UpstreamUnavailableError('registry database unreachable');
      if (state.mode === 'refuse') throw new ValidationError('bad server parameter');
      return { server: MAIN };
    },
  } as unknown as PeerClient;
  return { state, peer };
}

describe('ServerResolver during registry outages (issue 36)', () => {
  it('When many requests miss the cache at once, then they share one registry call', async () => {
    const r = registry();
    let open!: () => void;
    r.state.gate = new Promise((res) => (open = res));
    const resolver = new ServerResolver(r.peer, 0);
    const all = Promise.all(Array.from({ length: 16 }, () => resolver.resolve('Main')));
    open();
    expect((await all).map((s) => s?.id)).toEqual(Array(16).fill('srv-main'));
    expect(r.state.calls).toBe(1);
  });

  it('When the registry fails on a transient fault, then a cached answer younger than staleMs is used and the registry is asked again in the background; a never-resolved key is a 503', async () => {
    const r = registry();
    const resolver = new ServerResolver(r.peer, 0, 60_000);
    expect((await resolver.resolve('Main'))?.id).toBe('srv-main');
    r.state.mode = 'down';
    // First failure: the call is made, then the stale answer is used.
    expect((await resolver.resolve('Main'))?.id).toBe('srv-main');
    const callsAfterFirst = r.state.calls;
    // While failing: answered at once from the stale entry, one background call per key at a time.
    expect((await resolver.resolve('Main'))?.id).toBe('srv-main');
    expect(r.state.calls).toBe(callsAfterFirst + 1);
    await expect(resolver.resolve('Never seen')).rejects.toBeInstanceOf(UpstreamUnavailableError);
    // Back up: fresh answers again.
    r.state.mode = 'up';
    await new Promise((res) => setImmediate(res));
    expect((await resolver.resolve('Main'))?.id).toBe('srv-main');
  });

  it('When the cached answer is older than staleMs, or the registry refuses the value (permanent), then the error reaches the caller', async () => {
    const r = registry();
    const resolver = new ServerResolver(r.peer, 0, 0);
    await resolver.resolve('Main');
    r.state.mode = 'down';
    await expect(resolver.resolve('Main')).rejects.toBeInstanceOf(UpstreamUnavailableError);
    const r2 = registry();
    const resolver2 = new ServerResolver(r2.peer, 0, 60_000);
    await resolver2.resolve('Main');
    r2.state.mode = 'refuse';
    await expect(resolver2.resolve('Main')).rejects.toBeInstanceOf(ValidationError);
  });
});
