/**
 * Routing-key pattern matching with AMQP 0-9-1 topic-exchange semantics (as in RabbitMQ's
 * `rabbit_exchange_type_topic`): a routing key and a pattern are lists of words separated by `.`;
 * in a pattern, a word that is exactly `*` matches exactly one word and a word that is exactly `#`
 * matches zero or more words. Any other word (including `a*` or `#b`) matches itself literally.
 * Empty words are words too: `a..b` has three words, the middle one empty; the empty string has
 * no words (so `#` matches it and `*` does not), as in RabbitMQ's `split_topic_key`.
 */

/** A compiled pattern: returns true when the routing key matches. */
export type TopicMatcher = (routingKey: string) => boolean;

const cache = new Map<string, TopicMatcher>();
const CACHE_LIMIT = 1000;

/**
 * Compiles a topic pattern (e.g. `catalogue.*.changed.v1`, `analysis.#`) into a matcher.
 * Runs in O(words(pattern) x words(key)) per call (dynamic programming over both word lists).
 */
export function compileTopicPattern(pattern: string): TopicMatcher {
  const cached = cache.get(pattern);
  if (cached) return cached;
  // Collapse runs of `#`: `#.#` matches exactly what `#` matches.
  const words: string[] = [];
  for (const w of wordsOf(pattern)) {
    if (w === '#' && words[words.length - 1] === '#') continue;
    words.push(w);
  }
  const hasWildcard = words.some((w) => w === '*' || w === '#');
  const matcher: TopicMatcher = hasWildcard
    ? (routingKey) => matchWords(words, wordsOf(routingKey))
    : (routingKey) => routingKey === pattern;
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, matcher);
  return matcher;
}

/** True when `routingKey` matches the topic `pattern` (see module comment for the syntax). */
export function matchTopic(pattern: string, routingKey: string): boolean {
  return compileTopicPattern(pattern)(routingKey);
}

/** True when `routingKey` matches at least one of `patterns`. */
export function matchAnyTopic(patterns: readonly string[], routingKey: string): boolean {
  for (const p of patterns) if (compileTopicPattern(p)(routingKey)) return true;
  return false;
}

function wordsOf(s: string): string[] {
  return s === '' ? [] : s.split('.');
}

/**
 * reachable[j] = the first i pattern words can match the first j key words.
 * One row per pattern word; `#` spreads reachability forward (zero or more words).
 */
function matchWords(pattern: readonly string[], key: readonly string[]): boolean {
  const n = key.length;
  let prev: boolean[] = new Array<boolean>(n + 1).fill(false);
  prev[0] = true;
  for (const pw of pattern) {
    const next: boolean[] = new Array<boolean>(n + 1).fill(false);
    if (pw === '#') {
      let seen = false;
      for (let j = 0; j <= n; j++) {
        if (prev[j]) seen = true;
        next[j] = seen;
      }
    } else {
      for (let j = 1; j <= n; j++) {
        next[j] = prev[j - 1] === true && (pw === '*' || pw === key[j - 1]);
      }
    }
    prev = next;
  }
  return prev[n] === true;
}
