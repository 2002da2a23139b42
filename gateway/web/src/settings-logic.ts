/** Pure logic of the settings editor (unit-tested): control kinds and the PUT body of a change. */
import { SETTINGS, SETTING_SECRET_MASK } from '@polyphony/contracts';

export interface SettingLike {
  key: string;
  value: string | number | boolean | null;
  secret: boolean;
}

export type InputKind = { type: 'boolean' } | { type: 'enum'; options: string[] } | { type: 'number' } | { type: 'text' };

/** How a setting is edited, from its contract schema (SETTINGS) and, failing that, its value. */
export function settingInputKind(s: SettingLike): InputKind {
  const spec = SETTINGS.find((x) => x.key === s.key);
  if (spec) {
    const d = spec.default;
    const enumValues = findEnum(spec.schema);
    if (enumValues) return { type: 'enum', options: enumValues };
    if (typeof d === 'boolean') return { type: 'boolean' };
    if (typeof d === 'number') return { type: 'number' };
  }
  if (typeof s.value === 'boolean') return { type: 'boolean' };
  if (typeof s.value === 'number') return { type: 'number' };
  return { type: 'text' };
}

/** The options of a zod enum (possibly wrapped), else undefined. */
function findEnum(schema: unknown): string[] | undefined {
  const def = (schema as { _def?: { typeName?: string; values?: unknown; innerType?: unknown; schema?: unknown } })._def;
  if (!def) return undefined;
  if (def.typeName === 'ZodEnum' && Array.isArray(def.values)) return def.values as string[];
  if (def.innerType) return findEnum(def.innerType);
  if (def.schema) return findEnum(def.schema);
  return undefined;
}

/**
 * The PUT /api/config body for the edited values: only changed keys; a blank secret is left out
 * (keeps the stored one); an emptied non-secret text becomes null (reset to default) unless it was
 * already unset; numbers are sent as numbers.
 */
export function settingsChanges(shown: SettingLike[], values: Map<string, string | boolean>): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const s of shown) {
    if (!values.has(s.key)) continue;
    const v = values.get(s.key)!;
    if (s.secret) {
      if (typeof v === 'string' && v !== '' && v !== SETTING_SECRET_MASK) out[s.key] = v;
      continue;
    }
    if (typeof v === 'boolean') {
      const before = s.value === true || s.value === 'true';
      if (v !== before) out[s.key] = v;
      continue;
    }
    const before = s.value === null ? '' : String(s.value);
    if (v === before) continue;
    if (v.trim() === '') out[s.key] = null;
    else if (typeof s.value === 'number' || (s.value === null && /^-?\d+(\.\d+)?$/.test(v.trim()))) out[s.key] = Number(v);
    else out[s.key] = v;
  }
  return out;
}
