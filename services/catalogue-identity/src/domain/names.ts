/**
 * Normalised artist name used as the lookup key of artist_server_map: Unicode NFKC, lower case,
 * whitespace runs collapsed to one space, trimmed. Matching by this key is what "artist name ->
 * provider artist id" means on a server (the index's artist similarity answers with names).
 * @param name artist name as a media server reports it.
 * @returns the key ('' for a blank name).
 */
export function normaliseArtistName(name: string): string {
  return name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}
