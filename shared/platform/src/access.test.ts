import type { RouteAccess } from '@polyphony/contracts';
import { decideAccess } from './access';
import { ACCESSES, ACCESS_DECISIONS, CALLERS } from './__tests__/callers';

const EXPECTED = ACCESS_DECISIONS;

/** The one access decision (gateway and services): every identity kind x every access kind (`ACCESS_DECISIONS`). */
describe('decideAccess: every access kind x every identity kind', () => {
  it('covers every caller kind the gateway and the services produce', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(Object.keys(CALLERS).sort());
  });

  for (const [caller, identity] of Object.entries(CALLERS)) {
    ACCESSES.forEach((access, i) => {
      const expected = EXPECTED[caller]![i]!;
      it(`When a ${caller} calls a ${access} route, then the decision is ${expected === 200 ? 'allowed' : expected}`, () => {
        const refused = decideAccess({ access }, identity && { ...identity, iat: Date.now() });
        expect(refused?.httpStatus ?? 200).toBe(expected);
        if (refused) expect(refused.code).toBe(expected === 401 ? 'unauthorized' : 'forbidden');
      });
    });
  }

  it('When a route has an access kind the rules do not know, then it is refused (default deny)', () => {
    const refused = decideAccess({ access: 'everyone' as RouteAccess }, { ...CALLERS['cookie admin']!, iat: Date.now() });
    expect(refused?.httpStatus).toBe(403);
  });
});
