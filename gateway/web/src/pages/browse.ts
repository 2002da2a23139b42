/**
 * Browse (CATALOGUE): pages of songs, artists and albums (all, unique, duplicates of one server, orphans) and
 * the files analysis could not use, with their reason (GET /api/dashboard/browse). Kind and filter tabs, a
 * search box, a server choice ("All servers" = the whole catalogue; duplicates need one server) and
 * previous/next paging. The state lives in the hash route (`#/browse?kind=&filter=&q=&page=&server=`), so a
 * page of results can be linked and the back button steps through them.
 */
import { BROWSE_FILTERS, BROWSE_KINDS, browseRoutes, type BrowseFilter, type BrowseKind, type BrowseResponse } from '@polyphony/contracts';
import { call } from '../api';
import { errText, field, h, msg, nodes, say, select, table } from '../dom';
import { fmtDuration } from '../numbers';
import type { Page } from '../page';
import { selectedServer, state } from '../state';

const KIND_LABELS: Record<BrowseKind, string> = { songs: 'Songs', artists: 'Artists', albums: 'Albums', unanalyzable: 'Unanalyzable files' };
const FILTER_LABELS: Record<BrowseFilter, string> = { all: 'All', unique: 'Unique', duplicates: 'Duplicates', orphan: 'Orphans' };
const ALL = '';

type Row = Record<string, unknown>;
const text = (v: unknown): string => (v === null || v === undefined ? '—' : String(v));

/** The table of one answer, columns per kind. */
function resultsTable(r: BrowseResponse): HTMLTableElement {
  const rows = r.results as Row[];
  const first = (r.page - 1) * r.page_size + 1;
  const caption = `${KIND_LABELS[r.kind]} ${first}–${first + rows.length - 1} of ${r.total}${r.capped ? '+' : ''}${r.server ? ` on ${r.server}` : ' (all servers)'}`;
  if (r.kind === 'artists') return table(caption, ['Artist', 'Songs', 'Albums'], rows.map((a) => [text(a.artist), text(a.songs), text(a.albums)]), { class: 'browse' });
  if (r.kind === 'albums') return table(caption, ['Album', 'Album artist', 'Songs', 'Year'], rows.map((a) => [text(a.album), text(a.album_artist), text(a.songs), text(a.year)]), { class: 'browse' });
  if (r.kind === 'unanalyzable') {
    return table(
      caption,
      ['Title', 'Artist', 'Server', 'Reason', 'Path', 'Excluded'],
      rows.map((f) => [text(f.title), text(f.author), text(f.server), h('span', { title: text(f.detail), 'data-reason': text(f.reason_code) }, text(f.reason)), text(f.path), f.excluded_at ? new Date(String(f.excluded_at)).toLocaleString() : '—']),
      { class: 'browse' },
    );
  }
  const files = r.filter === 'duplicates';
  return table(
    caption,
    ['Title', 'Artist', 'Album', 'Length', files ? 'Files' : 'Copies'],
    rows.map((s) => [
      // A link to its similar songs when the rows are in the ids of the server the sidebar selects (the Similar songs page's).
      s.item_id && r.server && r.server === selectedServer()?.name && r.filter !== 'orphan' ? h('a', { href: `#/similar?item_id=${encodeURIComponent(String(s.item_id))}`, text: text(s.title) }) : text(s.title),
      text(s.author),
      text(s.album),
      typeof s.duration === 'number' ? fmtDuration(s.duration) : '—',
      files && Array.isArray(s.files) ? h('ul', { class: 'plain' }, (s.files as Row[]).map((f) => h('li', { text: text(f.path ?? f.item_id) }))) : text(s.copies),
    ]),
    { class: 'browse' },
  );
}

const page: Page = {
  title: 'Browse',
  tag: 'CATALOGUE',
  render(root, { params }) {
    const kind = (BROWSE_KINDS as readonly string[]).includes(params.get('kind') ?? '') ? (params.get('kind') as BrowseKind) : 'songs';
    const filter = (BROWSE_FILTERS as readonly string[]).includes(params.get('filter') ?? '') ? (params.get('filter') as BrowseFilter) : 'all';
    const pageNo = Math.max(1, Math.trunc(Number(params.get('page') ?? 1)) || 1);
    const q = params.get('q') ?? '';
    const defaultName = state.servers.find((s) => s.is_default)?.name ?? ALL;
    const server = params.has('server') ? (params.get('server') ?? ALL) : defaultName;
    const go = (next: Partial<{ kind: BrowseKind; filter: BrowseFilter; page: number; q: string; server: string }>) => {
      const p = new URLSearchParams({ kind, filter, page: String(pageNo), q, server, ...Object.fromEntries(Object.entries(next).map(([k, v]) => [k, String(v)])) });
      if (!('page' in next)) p.set('page', '1');
      location.hash = `#/browse?${p.toString()}`;
    };

    const tabs = <T extends string>(label: string, values: readonly T[], names: Record<T, string>, current: T, pick: (v: T) => void) =>
      h(
        'div',
        { class: 'tabs', role: 'group', 'aria-label': label },
        values.map((v) => h('button', { type: 'button', class: 'tab', 'aria-pressed': String(v === current), text: names[v], onclick: () => pick(v) })),
      );
    const serverSelect = select([[ALL, 'All servers'], ...state.servers.map((s): [string, string] => [s.name, s.name])], server);
    serverSelect.addEventListener('change', () => go({ server: serverSelect.value }));
    const search = h('input', { type: 'search', value: q, placeholder: 'Title, artist, album…' });
    const form = h('form', { class: 'inline', role: 'search' }, field('Search', search), field('Server', serverSelect), h('button', { type: 'submit', class: 'primary', text: 'Search' }));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      go({ q: search.value.trim() });
    });
    const out = msg();
    const list = h('div', { class: 'browse-results' });
    const prev = h('button', { type: 'button', text: '‹ Previous', disabled: pageNo <= 1, onclick: () => go({ page: pageNo - 1 }) });
    const next = h('button', { type: 'button', text: 'Next ›', disabled: true, onclick: () => go({ page: pageNo + 1 }) });
    const where = h('span', { class: 'muted', text: `Page ${pageNo}` });
    root.append(
      ...nodes(
        tabs('Kind', BROWSE_KINDS, KIND_LABELS, kind, (v) => go({ kind: v })),
        kind === 'unanalyzable' ? null : tabs('Songs kept', BROWSE_FILTERS, FILTER_LABELS, filter, (v) => go({ filter: v })),
        form,
        out,
        list,
        h('nav', { class: 'actions pager', 'aria-label': 'Pages' }, prev, where, next),
      ),
    );
    if (kind !== 'unanalyzable' && filter === 'duplicates' && server === ALL) {
      say(out, 'Duplicates are several files of one song on one server: choose a server.', 'info');
      return;
    }
    const ctrl = new AbortController();
    call(browseRoutes.browse, { query: { kind, filter, page: pageNo, ...(q ? { q } : {}), ...(server ? { server } : {}) } }, { signal: ctrl.signal })
      .then((r) => {
        next.disabled = !r.has_more;
        list.replaceChildren(r.results.length ? resultsTable(r) : h('p', { class: 'muted', text: pageNo > 1 ? 'No more rows.' : 'Nothing to list.' }));
      })
      .catch((err: unknown) => {
        if (!ctrl.signal.aborted) say(out, errText(err), 'error');
      });
    return () => ctrl.abort();
  },
};
export default page;
