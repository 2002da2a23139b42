import jwt from 'jsonwebtoken';
import { signSession, verifySession } from './jwt';

const CURRENT = 'c'.repeat(48);
const PREVIOUS = 'p'.repeat(48);
const claims = { sub: 'user-1', sid: 'session-1', role: 'admin' as const };
const inAnHour = () => Date.now() + 3600_000;

describe('session tokens (verifySession with cached HMAC key objects)', () => {
  it('When a token is signed with the current or a verify-only previous secret, then it verifies to its claims', () => {
    expect(verifySession(signSession(claims, CURRENT, inAnHour()), [CURRENT, PREVIOUS])).toEqual(claims);
    expect(verifySession(signSession(claims, PREVIOUS, inAnHour()), [CURRENT, PREVIOUS])).toEqual(claims);
    // The same secrets again (cached keys) give the same answers.
    expect(verifySession(signSession(claims, PREVIOUS, inAnHour()), [CURRENT, PREVIOUS])).toEqual(claims);
  });

  it('When the secret that signed a token is no longer listed, then it is refused', () => {
    const token = signSession(claims, PREVIOUS, inAnHour());
    expect(verifySession(token, [PREVIOUS])).toEqual(claims); // its key is cached now
    expect(verifySession(token, [CURRENT])).toBeUndefined();
  });

  it('When a token is unsigned, of another algorithm, expired, without exp or of the wrong shape, then it is refused', () => {
    const payload = { ...claims, exp: Math.floor(inAnHour() / 1000) };
    expect(verifySession(jwt.sign(payload, null, { algorithm: 'none' }), [CURRENT])).toBeUndefined();
    expect(verifySession(jwt.sign(payload, CURRENT, { algorithm: 'HS512' }), [CURRENT])).toBeUndefined();
    expect(verifySession(signSession(claims, CURRENT, Date.now() - 60_000), [CURRENT])).toBeUndefined();
    expect(verifySession(jwt.sign({ ...claims }, CURRENT, { algorithm: 'HS256' }), [CURRENT])).toBeUndefined();
    expect(verifySession(jwt.sign({ ...payload, role: 'root' }, CURRENT, { algorithm: 'HS256' }), [CURRENT])).toBeUndefined();
    expect(verifySession('not.a.token', [CURRENT])).toBeUndefined();
  });

  it('When more than 16 different secrets have been used, then tokens still verify only against the listed secrets', () => {
    for (let i = 0; i < 40; i++) {
      const secret = `rotated-secret-${i}-${'x'.repeat(32)}`;
      const token = signSession(claims, secret, inAnHour());
      expect(verifySession(token, [secret])).toEqual(claims);
      expect(verifySession(token, [CURRENT])).toBeUndefined();
    }
  });
});
