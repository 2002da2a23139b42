/** Pure formatting of track rows (unit-tested; no DOM). */
export interface TrackLike {
  item_id: string;
  title?: string | null;
  author?: string | null;
  album?: string | null;
}

/** "Title — Artist", with placeholders for missing tags. */
export function trackLabel(t: TrackLike): string {
  return `${t.title ?? '(untitled)'} — ${t.author ?? 'unknown artist'}`;
}

/** Hash link of the Similar songs page seeded with this track. */
export function similarHref(t: TrackLike): string {
  const p = new URLSearchParams({ item_id: t.item_id, label: trackLabel(t) });
  return `#/similar?${p.toString()}`;
}

/** A distance with 4 decimals ("—" when absent). */
export function fmtDistance(d: number | null | undefined): string {
  return typeof d === 'number' && Number.isFinite(d) ? d.toFixed(4) : '—';
}

/** Parses the reference `label:prob,label:prob` strings (mood_vector, other_features) into pairs, best first. */
export function parseLabelScores(s: string | null | undefined): Array<{ label: string; score: number }> {
  if (!s) return [];
  return s
    .split(',')
    .map((part) => {
      const i = part.lastIndexOf(':');
      return { label: part.slice(0, i).trim(), score: Number(part.slice(i + 1)) };
    })
    .filter((x) => x.label && Number.isFinite(x.score))
    .sort((a, b) => b.score - a.score);
}

/** Bytes as B/kB/MB/GB with one decimal. */
export function fmtBytes(n: number | null | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/**
 * Splits a lyrics snippet whose matches are marked `<b>…</b>` into text parts (bold or not), so the
 * page builds <b> elements itself and never parses server text as HTML.
 */
export function snippetParts(s: string): Array<{ text: string; bold: boolean }> {
  const out: Array<{ text: string; bold: boolean }> = [];
  let bold = false;
  for (const piece of s.split(/(<\/?b>)/i)) {
    if (/^<b>$/i.test(piece)) bold = true;
    else if (/^<\/b>$/i.test(piece)) bold = false;
    else if (piece) out.push({ text: piece, bold });
  }
  return out;
}
