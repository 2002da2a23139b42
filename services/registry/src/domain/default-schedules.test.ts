import { nextRun } from './schedule.service';
import { ALBUM_OF_THE_WEEK_SCHEDULE, DEFAULT_CLEANING_SCHEDULE, albumOfTheWeekSchedule, cleaningCronFromHours, defaultSchedules } from './default-schedules';

describe('built-in schedules from the retired CLEANING_SCHEDULE_HOURS', () => {
  it.each([
    [undefined, '30 3 * * *', true],
    ['24', '30 3 * * *', true],
    ['0', '30 3 * * *', false],
    ['0.5', '*/30 * * * *', true],
    ['0.3', '*/15 * * * *', true],
    ['1', '30 */1 * * *', true],
    ['6', '30 */6 * * *', true],
    ['5', '30 */4 * * *', true],
    ['12.2', '30 */12 * * *', true],
    ['48', '30 3 */2 * *', true],
    ['168', '30 3 * * 0', true],
    ['720', '30 3 1 * *', true],
    ['-1', '30 3 * * *', true],
    ['often', '30 3 * * *', true],
  ])('When the old value is %p, then the schedule is %p (enabled %p)', (hours, cron, enabled) => {
    expect(cleaningCronFromHours(hours)).toEqual({ cron, enabled });
    // Every expression is one croner accepts.
    expect(nextRun(cron, 'UTC', new Date('2026-01-01T00:00:00Z'))).toBeInstanceOf(Date);
  });

  it('When the defaults are built, then there is one cleaning schedule in the install time zone with no parameters', () => {
    expect(defaultSchedules({ CLEANING_SCHEDULE_HOURS: '6' }, 'Europe/Berlin')).toEqual([
      { name: DEFAULT_CLEANING_SCHEDULE, kind: 'cleaning', cron: '30 */6 * * *', timezone: 'Europe/Berlin', enabled: true, params: {} },
    ]);
  });

  it('When the Album of the Week schedule is built, then it is Saturdays 00:30 in the install zone, disabled, with no parameters', () => {
    expect(albumOfTheWeekSchedule('Europe/Berlin')).toEqual({ name: ALBUM_OF_THE_WEEK_SCHEDULE, kind: 'album_of_the_week', cron: '30 0 * * 6', timezone: 'Europe/Berlin', enabled: false, params: {} });
    // A Saturday: 2026-12-05 00:30 in Berlin is 2026-12-04 23:30 UTC.
    expect(nextRun('30 0 * * 6', 'Europe/Berlin', new Date('2026-12-01T00:00:00Z'))?.toISOString()).toBe('2026-12-04T23:30:00.000Z');
  });
});
