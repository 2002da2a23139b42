import { safeParseValue, z } from './zod';

describe('safeParseValue', () => {
  const schema = z.object({ n: z.coerce.number().int().optional() });

  it('When a coerced field holds an object whose conversion throws, then it is a failed parse, not an exception', () => {
    expect(() => schema.safeParse({ n: { toString: 'x' } })).toThrow(TypeError);
    const r = safeParseValue(schema, { n: { toString: 'x' } });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues).toEqual([expect.objectContaining({ code: 'custom', path: [] })]);
  });

  it('When the value is valid or plainly invalid, then it behaves as safeParse', () => {
    expect(safeParseValue(schema, { n: '4' })).toEqual({ success: true, data: { n: 4 } });
    const r = safeParseValue(schema, { n: 'four' });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues[0]?.path).toEqual(['n']);
  });
});
