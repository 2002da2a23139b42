import type { OutcomeCounts, RunServerRow } from './ports';
import { runProgress, serverCounts } from './run-progress';

const row = (serverId: string, status: RunServerRow['status'], patch: Partial<RunServerRow> = {}): RunServerRow => ({
  serverId,
  serverName: serverId.toUpperCase(),
  position: 0,
  status,
  seen: 0,
  skippedMapped: 0,
  excluded: 0,
  enumerated: false,
  failures: 0,
  ...patch,
});
const outcomes = (o: Partial<OutcomeCounts>): OutcomeCounts => ({ analyzed: 0, mapped_existing: 0, skipped_mapped: 0, retagged: 0, fingerprinted: 0, failed: 0, excluded: 0, cancelled: 0, queued: 0, ...o });

describe('analysis run board figures', () => {
  it('When a server has outcome rows, then its counts add the enumeration counters to them (retagged counts as analysed)', () => {
    const rows = [row('a', 'running', { seen: 10, skippedMapped: 2, excluded: 1, enumerated: true })];
    const [c] = serverCounts(rows, new Map([['a', outcomes({ analyzed: 3, retagged: 1, failed: 1, excluded: 1, skipped_mapped: 1, queued: 2 })]]));
    // seen: the larger of the listed 10 and the rows accounted for (3+1+1+1+1+2 outcome rows + 2 + 1 skipped) = 12
    expect(c).toEqual({ serverId: 'a', serverName: 'A', seen: 12, skippedMapped: 3, mappedExisting: 0, analyzed: 4, failed: 3, status: 'running', queued: 2 });
  });

  it('When a server failed, then its error is reported; a server without outcome rows counts zeros', () => {
    const [c] = serverCounts([row('b', 'failed', { error: 'unreachable' })], new Map());
    expect(c).toMatchObject({ seen: 0, analyzed: 0, failed: 0, status: 'failed', error: 'unreachable', queued: 0 });
  });

  it('When one of two servers is done and the other half finished after enumeration, then progress is (1 + 0.05 + 0.95 / 2) / 2 of 95', () => {
    const rows = [row('a', 'done'), row('b', 'running', { enumerated: true })];
    const counts = serverCounts(rows, new Map([['b', outcomes({ analyzed: 5, queued: 5 })]]));
    expect(runProgress(rows, counts)).toBeCloseTo(((1 + 0.05 + 0.95 * 0.5) / 2) * 95, 10);
    expect(runProgress([], [])).toBe(95);
  });
});
