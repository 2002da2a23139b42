import { dayMatches, parseCronSpec, scheduleOverlaps, zoneOffsetMinutes } from './cron-overlap';

const on = (name: string, cron: string, timezone = 'UTC', enabled = true) => ({ name, cron, timezone, enabled });
const FROM = new Date('2026-12-04T00:00:00Z');

describe('cron overlap warning of the Schedules page', () => {
  it('When fields use ranges, steps, lists and names, then they expand as cron reads them (7 = Sunday)', () => {
    const s = parseCronSpec('*/15 1-3,5 * JAN-MAR mon-fri');
    expect([...s.minutes]).toEqual([0, 15, 30, 45]);
    expect([...s.hours]).toEqual([1, 2, 3, 5]);
    expect([...s.months]).toEqual([1, 2, 3]);
    expect([...s.dows].sort()).toEqual([1, 2, 3, 4, 5]);
    expect([...parseCronSpec('0 0 * * 7').dows]).toEqual([0]);
    // Six fields: seconds first, ignored.
    expect([...parseCronSpec('*/2 30 0 * * 6').minutes]).toEqual([30]);
    expect(() => parseCronSpec('0 0 *')).toThrow(/5 or 6 fields/);
  });

  it('When both day fields are restricted, then a day matches on EITHER; with one a wildcard, then on both', () => {
    const either = parseCronSpec('0 0 13 * 5');
    expect(dayMatches(either, 3, 13, 2)).toBe(true); // the 13th, a Tuesday
    expect(dayMatches(either, 3, 6, 5)).toBe(true); // a Friday, the 6th
    expect(dayMatches(either, 3, 6, 2)).toBe(false);
    const fridays = parseCronSpec('0 0 * * 5');
    expect(dayMatches(fridays, 3, 13, 2)).toBe(false);
  });

  it('When two enabled schedules share a minute, then they are reported with the first common minute; disabled ones never', () => {
    const overlaps = scheduleOverlaps([on('Cleaning', '30 3 * * *'), on('Backup', '30 3 * * 0'), on('Album of the Week', '30 3 * * 6', 'UTC', false)], FROM);
    expect(overlaps).toEqual([{ a: 'Cleaning', b: 'Backup', example: '2026-12-06 03:30 UTC' }]);
  });

  it('When the minutes, hours or days never meet, then nothing is reported', () => {
    expect(scheduleOverlaps([on('a', '0 3 * * *'), on('b', '30 3 * * *'), on('c', '0 4 * * *')], FROM)).toEqual([]);
    // Saturdays and the 1st of the month meet whenever a month starts on a Saturday.
    expect(scheduleOverlaps([on('sat', '0 0 * * 6'), on('first', '0 0 1 * *')], FROM)).toHaveLength(1);
    // February 30th never exists.
    expect(scheduleOverlaps([on('a', '0 0 30 2 *'), on('b', '0 0 * * *')], FROM)).toEqual([]);
  });

  it("When day-of-month OR day-of-week applies, then 'the 13th or Fridays' meets 'Mondays' on a Monday the 13th, and 'Fridays' alone does not", () => {
    const res = scheduleOverlaps([on('odd', '0 12 13 * 5'), on('mondays', '0 12 * * 1')], FROM);
    expect(res).toHaveLength(1);
    const day = new Date(`${res[0]!.example.slice(0, 10)}T00:00:00Z`);
    expect(day.getUTCDate()).toBe(13);
    expect(day.getUTCDay()).toBe(1);
    expect(scheduleOverlaps([on('fridays', '0 12 * * 5'), on('mondays', '0 12 * * 1')], FROM)).toEqual([]);
  });

  it('When the schedules are in different time zones, then the same instant counts, across the day boundary too', () => {
    expect(zoneOffsetMinutes('Asia/Tokyo', FROM)).toBe(540);
    // 00:30 Saturday in Tokyo is 15:30 Friday UTC.
    expect(scheduleOverlaps([on('tokyo', '30 0 * * 6', 'Asia/Tokyo'), on('utc', '30 15 * * 5')], FROM)).toHaveLength(1);
    expect(scheduleOverlaps([on('tokyo', '30 0 * * 6', 'Asia/Tokyo'), on('utc', '30 0 * * 6')], FROM)).toEqual([]);
    // Berlin is UTC+1 in winter and UTC+2 in summer: 03:00 Berlin meets 01:00 UTC (summer) and 02:00 UTC (winter).
    expect(scheduleOverlaps([on('berlin', '0 3 * * *', 'Europe/Berlin'), on('utc', '0 1 * * *')], FROM)).toHaveLength(1);
    expect(scheduleOverlaps([on('berlin', '0 3 * * *', 'Europe/Berlin'), on('utc', '0 2 * * *')], FROM)).toHaveLength(1);
    expect(scheduleOverlaps([on('berlin', '0 3 * * *', 'Europe/Berlin'), on('utc', '0 3 * * *')], FROM)).toEqual([]);
  });
});
