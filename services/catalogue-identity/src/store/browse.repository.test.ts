import { likePattern } from './browse.repository';

describe('browse search pattern', () => {
  it('When q holds LIKE wildcards or a backslash, then they are matched literally, anywhere in the text', () => {
    expect(likePattern('100%_a\\b')).toBe('%100\\%\\_a\\\\b%');
    expect(likePattern('rain')).toBe('%rain%');
  });
});
