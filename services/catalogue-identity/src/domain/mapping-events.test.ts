import { RoutingKeys } from '@polyphony/contracts';
import { createLogger, type Bus } from '@polyphony/platform';
import { MappingChangedPublisher } from './mapping-events';

/** Records mapping.changed events in `sent` and mappings.logged nudges in `nudges`. */
function fakeBus(): { bus: Bus; sent: Array<[string, unknown]>; nudges: unknown[] } {
  const sent: Array<[string, unknown]> = [];
  const nudges: unknown[] = [];
  const bus = { publish: async (k: string, p: unknown) => void (k === RoutingKeys.mappingsLogged ? nudges.push(p) : sent.push([k, p])) } as unknown as Bus;
  return { bus, sent, nudges };
}
const logger = createLogger({ service: 'test', level: 'error' });

describe('MappingChangedPublisher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('When many changes of one server come within the quiet period, then one event is published after it', async () => {
    const { bus, sent } = fakeBus();
    const p = new MappingChangedPublisher(bus, 1000, logger);
    for (let i = 0; i < 50; i++) {
      p.changed('s1', 'analysis');
      jest.advanceTimersByTime(100);
    }
    p.changed('s2', 'analysis');
    expect(sent).toEqual([]);
    jest.advanceTimersByTime(1000);
    await Promise.resolve();
    expect(sent).toEqual([
      [RoutingKeys.mappingChanged, { serverId: 's1', reason: 'analysis' }],
      [RoutingKeys.mappingChanged, { serverId: 's2', reason: 'analysis' }],
    ]);
  });

  it('When the service stops, then pending events are flushed at once and later changes are dropped', async () => {
    const { bus, sent } = fakeBus();
    const p = new MappingChangedPublisher(bus, 60_000, logger);
    p.changed('s1', 'analysis');
    await p.flush();
    expect(sent).toEqual([[RoutingKeys.mappingChanged, { serverId: 's1', reason: 'analysis' }]]);
    p.changed('s1', 'analysis');
    jest.advanceTimersByTime(120_000);
    expect(sent).toHaveLength(1);
  });

  it('When debounce is 0 or now() is used, then the event goes out without waiting', async () => {
    const { bus, sent } = fakeBus();
    const p = new MappingChangedPublisher(bus, 0, logger);
    p.changed('s1', 'x');
    await p.now({ reason: 'relabel' });
    expect(sent.map(([, e]) => e)).toEqual([{ serverId: 's1', reason: 'x' }, { reason: 'relabel' }]);
  });

  it('When many changes come within the nudge window, then one mappings.logged nudge goes out at its end, long before the debounced event', async () => {
    const { bus, sent, nudges } = fakeBus();
    const p = new MappingChangedPublisher(bus, 1000, logger, undefined, 10);
    for (let i = 0; i < 20; i++) p.changed('s1', 'analysis');
    expect(nudges).toEqual([]);
    jest.advanceTimersByTime(10);
    await Promise.resolve();
    expect(nudges).toEqual([{ reason: 'analysis', serverId: 's1' }]);
    expect(sent).toEqual([]);
    p.changed('s2', 'sweep');
    jest.advanceTimersByTime(10);
    await Promise.resolve();
    expect(nudges).toHaveLength(2);
  });
});
