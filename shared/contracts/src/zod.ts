import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Adds `.openapi()` to zod schemas once, for every contracts module.
extendZodWithOpenApi(z);

export { z };

/**
 * `schema.safeParse(value)` that never throws. zod's coercions call `Number(x)`/`String(x)` on the
 * raw value, and a hostile JSON value such as `[{"toString":"x"}]` makes that conversion throw a
 * TypeError inside zod ("Cannot convert object to primitive value"), which would surface as a 500.
 * Such a value is the caller's fault: it is reported as an ordinary validation failure of the
 * whole value (`path: []`, code `custom`).
 */
export function safeParseValue<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown): z.SafeParseReturnType<unknown, T> {
  try {
    return schema.safeParse(value);
  } catch (err) {
    if (!(err instanceof TypeError || err instanceof RangeError)) throw err;
    const error = new z.ZodError([{ code: z.ZodIssueCode.custom, path: [], message: 'a value cannot be read as the type its field expects' }]);
    return { success: false, error };
  }
}
