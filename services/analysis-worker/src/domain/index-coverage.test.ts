import type { IndexLive } from '@polyphony/contracts';
import { indexCoverage } from './index-coverage';

const requested = new Date('2026-11-25T20:00:00.000Z');
const before = '2026-11-25T19:59:00.000Z';
const after = '2026-11-25T20:00:05.000Z';
const replica = (name: string, generation: number, buildStartedAt: string | null, live = true) => ({ replica: name, generation, items: 10, buildStartedAt, heartbeatAt: after, live });
const answer = (replicas: IndexLive['replicas'], own: { generation: number; buildStartedAt: string | null } = { generation: 7, buildStartedAt: after }): IndexLive => ({ ...own, items: 10, replicas, liveWithinMs: 15_000 });

describe(indexCoverage.name, () => {
  it('When every live replica serves a generation built after the request, then the songs are queryable there', () => {
    expect(indexCoverage(answer([replica('a', 7, after), replica('b', 7, after)]), requested)).toEqual({ ok: true, replicas: 2, generation: 7, lagging: [], target: 7 });
  });

  it('When one live replica still serves the older generation, then the run waits for it and names it and the target generation', () => {
    expect(indexCoverage(answer([replica('a', 7, after), replica('b', 6, before)]), requested)).toEqual({ ok: false, replicas: 2, lagging: ['b@6'], target: 7 });
  });

  it('When a lagging replica stopped heart-beating, then it is not waited for', () => {
    expect(indexCoverage(answer([replica('a', 7, after), replica('dead', 6, before, false)]), requested)).toMatchObject({ ok: true, replicas: 1, generation: 7 });
  });

  it('When no replica has built since the request, then there is no target (a rebuild may be asked again)', () => {
    expect(indexCoverage(answer([replica('a', 6, before), replica('b', 0, null)]), requested)).toEqual({ ok: false, replicas: 2, lagging: ['a@6', 'b@0'] });
  });

  it('When no replica reported at all, then the answering replica alone decides', () => {
    expect(indexCoverage(answer([]), requested)).toMatchObject({ ok: true, replicas: 1, generation: 7 });
    expect(indexCoverage(answer([], { generation: 6, buildStartedAt: before }), requested)).toMatchObject({ ok: false, lagging: ['answering replica@6'] });
  });
});
