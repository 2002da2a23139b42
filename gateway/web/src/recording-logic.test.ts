import { clipFileOf, describeResult, followUpLinks, fmtOffset, meterFraction, pickRecorderType, rmsDbfs, secondsLeft, type RecordingRow } from './recording-logic';

const row = (over: Partial<RecordingRow>): RecordingRow => ({ item_id: '42', title: 'Battle Music', author: 'Wesnoth', album: 'OST', score: 0.31, votes: 57, offset_seconds: 65.4, identified: true, lead: 49, ...over });

describe('Recording search page logic', () => {
  it('When the browser supports some containers, then the best one is asked for; none supported leaves the choice to the browser', () => {
    expect(pickRecorderType((t) => t.startsWith('audio/webm'))).toBe('audio/webm;codecs=opus');
    expect(pickRecorderType((t) => t === 'audio/mp4')).toBe('audio/mp4');
    expect(pickRecorderType(() => false)).toBe('');
  });

  it('When a recording has a parameterised type, then the upload names its plain type and a matching extension', () => {
    expect(clipFileOf('audio/webm;codecs=opus')).toEqual({ type: 'audio/webm', name: 'clip.webm' });
    expect(clipFileOf('audio/ogg; codecs=opus')).toEqual({ type: 'audio/ogg', name: 'clip.ogg' });
    expect(clipFileOf('audio/mp4;codecs=mp4a.40.2')).toEqual({ type: 'audio/mp4', name: 'clip.m4a' });
    expect(clipFileOf('')).toEqual({ type: 'audio/webm', name: 'clip.webm' });
  });

  it('When the meter reads samples, then full-scale sine is -3 dBFS, silence the floor, and the bar is linear in dB', () => {
    const sine = Float32Array.from({ length: 4800 }, (_, i) => Math.sin((2 * Math.PI * 440 * i) / 48000));
    expect(rmsDbfs(sine)).toBeCloseTo(-3.01, 1);
    expect(rmsDbfs(new Float32Array(512))).toBe(-70);
    expect(rmsDbfs(sine.map((v) => v * 1e-5))).toBe(-70);
    expect(meterFraction(-70)).toBe(0);
    expect(meterFraction(-35)).toBeCloseTo(0.5);
    expect(meterFraction(3)).toBe(1);
  });

  it('When a 10 s recording runs, then the countdown shows whole seconds left, rounded up, and ends at 0', () => {
    expect(secondsLeft(10, 0)).toBe(10);
    expect(secondsLeft(10, 100)).toBe(10);
    expect(secondsLeft(10, 9_001)).toBe(1);
    expect(secondsLeft(10, 10_000)).toBe(0);
    expect(secondsLeft(10, 12_000)).toBe(0);
    expect(fmtOffset(65.4)).toBe('1:05');
    expect(fmtOffset(-1)).toBe('0:00');
  });

  it('When the first row is identified, then the page names the song, where the clip starts and the evidence; otherwise it says no match', () => {
    const yes = describeResult([row({}), row({ item_id: '7', identified: false, votes: 8, lead: 8 })]);
    expect(yes.identified?.item_id).toBe('42');
    expect(yes.headline).toBe('Battle Music — Wesnoth');
    expect(yes.detail).toBe('OST · clip starts at 1:05 · 57 matching landmarks, 49 more than the next song · score 0.31');
    const no = describeResult([row({ identified: false, votes: 9, lead: 2 })]);
    expect(no.identified).toBeNull();
    expect(no.headline).toBe('No match');
    expect(no.detail).toMatch(/best candidate 9 matching landmarks, 2 ahead/);
    expect(describeResult([]).detail).toMatch(/No song of this server/);
  });

  it('When a song is identified, then its follow-up links seed Similar songs, Song path and Instant playlist with it', () => {
    const l = followUpLinks(row({ title: 'A & B', author: 'C' }));
    expect(new URLSearchParams(l.similar.split('?')[1]).get('item_id')).toBe('42');
    expect(l.similar.startsWith('#/similar?')).toBe(true);
    const p = new URLSearchParams(l.path.split('?')[1]);
    expect([l.path.split('?')[0], p.get('start_song_id'), p.get('start_title'), p.get('start_author')]).toEqual(['#/path', '42', 'A & B', 'C']);
    expect(l.playlist.split('?')[0]).toBe('#/chat');
    expect(new URLSearchParams(l.playlist.split('?')[1]).get('prompt')).toBe('Songs like A & B by C');
  });
});
