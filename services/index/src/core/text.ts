const ASCII = /^[\x00-\x7f]*$/;

/**
 * Text folding for search and for title/artist comparison: Unicode NFKD decomposition, combining marks
 * removed (so "Beyoncé" ~ "beyonce", "ﬁ" ~ "fi"), lower case, every run of non-letter/non-digit
 * characters turned into one space, trimmed. Same effect as the reference's
 * `lower(unaccent(...))` search column, done in JavaScript so no `unaccent` extension is needed.
 * Letters without a decomposition (ø, ł, ß) are kept as they are.
 */
export function foldText(text: string | null | undefined): string {
  if (!text) return '';
  // ASCII text (most titles and artists): NFKD and mark removal change nothing, the only letters and digits are
  // [a-z0-9] after lower-casing; same result without the Unicode passes (a per-candidate cost of similar songs).
  if (ASCII.test(text)) return text.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
  return foldUnicode(text);
}

/** `foldText` without its ASCII shortcut: the general Unicode passes, for any text. */
export function foldUnicode(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** Query tokens: the folded text split on spaces, duplicates removed, order kept, at most `max` (default 16). */
export function searchTokens(text: string, max = 16): string[] {
  const out: string[] = [];
  for (const t of foldText(text).split(' ')) {
    if (t && !out.includes(t)) out.push(t);
    if (out.length === max) break;
  }
  return out;
}

/** Key of a song for duplicate elimination: folded title and folded artist. */
export function songKey(title: string | null | undefined, artist: string | null | undefined): string {
  return `${foldText(title)}\u0000${foldText(artist)}`;
}

/** Key of an artist: its folded name (an empty name folds to ''). */
export function artistKey(name: string | null | undefined): string {
  return foldText(name);
}
