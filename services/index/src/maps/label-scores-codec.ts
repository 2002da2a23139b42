import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from '@polyphony/contracts';

/**
 * Compact bytes for the reference's `label:prob,...` strings (`mood_vector`, `other_features`) as the index's
 * in-memory metadata holds them (issue 19 memory): a label of the known vocabulary (MSD tags, MTT tags,
 * other-feature labels) becomes one byte, a probability written with exactly 3 decimals (`0.512`, `1.000`)
 * becomes its thousandths. The encoding is used only when decoding gives back the very same string, so a
 * row reads back byte for byte as stored; anything else (unknown label, other number format, spaces) stays
 * UTF-8. Both forms start with a byte that UTF-8 text never starts with (0xFE, 0xFF), so the reader tells them
 * apart without a flag:
 *  - `0xFE` + 6 x uint16 BE thousandths: the six OTHER_FEATURE_LABELS in their order (13 bytes, ~95 as text);
 *  - `0xFF` + n x (label byte, uint16 BE thousandths): any list of known labels (3n + 1 bytes; 16 for the
 *    5-tag mood_vector, ~65 as text).
 */

/** Label vocabulary, index = byte value: MSD, then MTT labels not already listed, then other-feature labels. */
const LABELS: readonly string[] = [...new Set<string>([...MSD_TAGS, ...MTT_TAGS, ...OTHER_FEATURE_LABELS])];
const LABEL_INDEX = new Map(LABELS.map((l, i) => [l, i]));
const OTHER_FORM = 0xfe;
const PAIRS_FORM = 0xff;
const THOUSANDTHS = /^[01]\.\d{3}$/;

/** `v` thousandths (0..1000) as the reference writes a probability: `0.512`, `1.000`. */
function formatThousandths(v: number): string {
  return `${Math.floor(v / 1000)}.${String(v % 1000).padStart(3, '0')}`;
}

/**
 * Compact form of `s`, or undefined when `s` must stay text (see the module comment).
 * @param s a `mood_vector` / `other_features` string as stored in `index.tracks`
 * @returns the bytes (first byte 0xFE or 0xFF), decoding to exactly `s`
 */
export function encodeLabelScores(s: string): Buffer | undefined {
  if (s === '' || s.length > 4000) return undefined;
  const parts = s.split(',');
  if (parts.length > 255) return undefined;
  const labels: number[] = [];
  const values: number[] = [];
  for (const part of parts) {
    const colon = part.lastIndexOf(':');
    if (colon <= 0) return undefined;
    const label = LABEL_INDEX.get(part.slice(0, colon));
    const num = part.slice(colon + 1);
    if (label === undefined || !THOUSANDTHS.test(num)) return undefined;
    const v = Number(num.slice(0, 1)) * 1000 + Number(num.slice(2));
    if (v > 1000) return undefined;
    labels.push(label);
    values.push(v);
  }
  const canonicalOther = labels.length === OTHER_FEATURE_LABELS.length && OTHER_FEATURE_LABELS.every((l, i) => LABELS[labels[i]!] === l);
  let out: Buffer;
  if (canonicalOther) {
    out = Buffer.allocUnsafe(1 + 2 * values.length);
    out[0] = OTHER_FORM;
    values.forEach((v, i) => out.writeUInt16BE(v, 1 + 2 * i));
  } else {
    out = Buffer.allocUnsafe(1 + 3 * values.length);
    out[0] = PAIRS_FORM;
    values.forEach((v, i) => {
      out[1 + 3 * i] = labels[i]!;
      out.writeUInt16BE(v, 2 + 3 * i);
    });
  }
  // Guard: only a form that reads back as the very same string is used.
  return decodeLabelScores(out, 0, out.length) === s ? out : undefined;
}

/** True when the bytes at `buf[off]` start a compact form (not UTF-8 text). */
export function isEncodedLabelScores(buf: Uint8Array, off: number, len: number): boolean {
  return len > 0 && buf[off]! >= OTHER_FORM;
}

/**
 * The string a compact form encodes.
 * @param buf bytes holding one form written by `encodeLabelScores` at [off, off + len)
 * @throws Error when the bytes are not such a form
 */
export function decodeLabelScores(buf: Buffer, off: number, len: number): string {
  const form = buf[off];
  const parts: string[] = [];
  if (form === OTHER_FORM && len === 1 + 2 * OTHER_FEATURE_LABELS.length) {
    for (let i = 0; i < OTHER_FEATURE_LABELS.length; i++) parts.push(`${OTHER_FEATURE_LABELS[i]}:${formatThousandths(buf.readUInt16BE(off + 1 + 2 * i))}`);
  } else if (form === PAIRS_FORM && (len - 1) % 3 === 0) {
    for (let p = off + 1; p < off + len; p += 3) {
      const label = LABELS[buf[p]!];
      if (label === undefined) throw new Error(`label-scores: unknown label byte ${buf[p]}`);
      parts.push(`${label}:${formatThousandths(buf.readUInt16BE(p + 1))}`);
    }
  } else {
    throw new Error(`label-scores: not a compact form (first byte ${form}, ${len} bytes)`);
  }
  return parts.join(',');
}
