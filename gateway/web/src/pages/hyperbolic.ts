/**
 * Hyperbolic (PER SERVER): the selected server's songs on the Poincaré disc (GET /api/hyperbolic/points), generic
 * songs near the centre, niche ones near the rim. Click a point (or pick a song with the search, or focus the disc
 * and press Enter for the song nearest the centre) to list its similar songs, its roots (more generic) or its niche
 * (more specific) songs (POST /api/hyperbolic/similar), highlighted on the disc. "Journey from/to here" sets the ends
 * of a journey (POST /api/hyperbolic/journey), drawn on the disc along its geodesic path. The tree
 * (GET /api/hyperbolic/tree) browses mood -> genre -> cluster -> songs. The disc is one canvas sized to its box
 * (square, at most 640 px), so the page fits a 393 px phone screen.
 */
import { hyperbolicRoutes, type HyperbolicJourneyResponse, type HyperbolicPointsResponse, type HyperbolicSimilarResponse, type HyperbolicTreeResponse } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, numberInput, say, select } from '../dom';
import { discFrame, discToScreen, nearestDrawn } from '../hyperbolic-logic';
import { rampColor } from '../map-logic';
import type { Page } from '../page';
import { songPicker } from '../picker';
import { similarHref, trackLabel } from '../track-format';
import { trackTable } from '../tracks';

type Point = HyperbolicPointsResponse['items'][number];
type Song = { item_id: string; title: string | null; author: string | null; album?: string | null };

const page: Page = {
  title: 'Hyperbolic',
  tag: 'PER SERVER',
  render(root) {
    root.classList.add('hyper-page');
    const out = msg();
    const mode = select([['similar', 'Similar'], ['roots', 'Roots (more generic)'], ['niche', 'Niche (more specific)']], 'similar');
    const spread = numberInput(0.5, 0, 0.99, 0.05);
    const limit = numberInput(20, 1, 500);
    const reload = h('button', { type: 'button', text: 'Reload' });
    const canvas = h('canvas', { tabindex: '0', role: 'img', 'aria-label': 'Poincaré disc of the songs: the centre holds the most generic songs, the rim the most niche. Enter picks the song nearest the centre.' });
    const tip = h('div', { class: 'map-tip', role: 'tooltip', hidden: true });
    const wrap = h('div', { class: 'hyper-disc' }, canvas, tip);
    const stats = h('p', { class: 'muted small' });
    const seedPicker = songPicker('Seed song', (t) => void explore(t));
    const picked = h('div', { class: 'picked', 'aria-live': 'polite' });
    const results = h('div');
    // Journey
    const length = numberInput(10, 3, 100);
    const dive = numberInput(0, 0, 0.95, 0.05);
    const startOut = h('p', { class: 'small', text: 'Start: none (click a song, then "Journey from here")' });
    const endOut = h('p', { class: 'small', text: 'End: none' });
    const journeyBtn = h('button', { type: 'button', class: 'primary', text: 'Draw journey', disabled: true });
    const journeyOut = msg();
    const journeyResults = h('div');
    // Tree
    const treeOut = msg();
    const crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Tree position' });
    const treeList = h('ul', { class: 'tree-items' });

    root.append(
      h('div', { class: 'toolbar' }, field('Mode', mode), field('Radial spread', spread), field('Results', limit), reload),
      out,
      wrap,
      stats,
      seedPicker.element,
      picked,
      results,
      h('section', {}, h('h2', { text: 'Journey' }), startOut, endOut, h('div', { class: 'toolbar' }, field('Songs', length), field('Ancestry dive', dive), journeyBtn), journeyOut, journeyResults),
      h('section', {}, h('h2', { text: 'Tree' }), crumbs, treeOut, treeList),
    );

    let points: Point[] = [];
    let discs: Array<[number, number]> = [];
    let seed: { id: string; disc: [number, number] } | undefined;
    let hits = new Set<string>();
    let journey: HyperbolicJourneyResponse | undefined;
    let start: Song | undefined;
    let end: Song | undefined;
    let size = 0;
    let frame = 0;
    const ctx = canvas.getContext('2d')!;

    const draw = () => {
      frame = 0;
      const t0 = performance.now();
      const dpr = window.devicePixelRatio || 1;
      size = Math.round(wrap.clientWidth);
      if (size <= 0) return;
      if (canvas.width !== Math.round(size * dpr)) {
        canvas.width = Math.round(size * dpr);
        canvas.height = Math.round(size * dpr);
      }
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, size, size);
      const f = discFrame(size);
      const styles = getComputedStyle(wrap);
      ctx.strokeStyle = styles.getPropertyValue('--line').trim() || '#999';
      ctx.lineWidth = 1;
      // The unit circle and the radius-0.5 circle (hyperbolic distance 2 artanh(0.5) = 1.1 from the centre).
      for (const r of [1, 0.5]) {
        ctx.beginPath();
        ctx.arc(f.cx, f.cy, f.r * r, 0, 2 * Math.PI);
        ctx.stroke();
      }
      const dot = Math.max(2, Math.min(5, 400 / Math.sqrt(points.length + 1)));
      points.forEach((p, i) => {
        const [x, y] = discToScreen(discs[i]!, size);
        ctx.fillStyle = hits.has(p.item_id) ? '#0072B2' : rampColor(p.hyperbolic_radius);
        ctx.beginPath();
        ctx.arc(x, y, hits.has(p.item_id) ? dot + 2 : dot, 0, 2 * Math.PI);
        ctx.fill();
      });
      if (journey) {
        ctx.strokeStyle = '#E69F00';
        ctx.lineWidth = 3;
        ctx.beginPath();
        journey.path.forEach((p, i) => {
          const [x, y] = discToScreen(p.disc, size);
          if (i === 0) ctx.moveTo(x, y);
          else ctx.lineTo(x, y);
        });
        ctx.stroke();
        ctx.fillStyle = '#D55E00';
        for (const s of journey.results) {
          const [x, y] = discToScreen(s.disc, size);
          ctx.beginPath();
          ctx.arc(x, y, dot + 2, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
      if (seed) {
        const [x, y] = discToScreen(seed.disc, size);
        ctx.strokeStyle = '#d00000';
        ctx.lineWidth = 3;
        ctx.beginPath();
        ctx.arc(x, y, dot + 5, 0, 2 * Math.PI);
        ctx.stroke();
      }
      canvas.dataset.renderMs = (performance.now() - t0).toFixed(1);
    };
    const redraw = () => {
      if (!frame) frame = requestAnimationFrame(draw);
    };

    const load = () =>
      busy(reload, out, async () => {
        say(out, 'Loading the disc…');
        const r = await call(hyperbolicRoutes.points, { query: {} }, { scoped: true });
        points = r.items;
        discs = points.map((p) => p.disc);
        say(out, r.count ? '' : 'No analysed song on this server yet.');
        stats.textContent = r.count ? `${r.count} songs on the disc${r.total > r.count ? ` (of ${r.total})` : ''}. Generation ${r.generation}. Colour: radius (blue = generic centre, red = niche rim).` : '';
        redraw();
      });

    /** Similar / roots / niche songs of a seed. */
    async function explore(t: Song): Promise<void> {
      try {
        say(out, `Exploring from ${trackLabel(t)}…`);
        const r: HyperbolicSimilarResponse = await call(
          hyperbolicRoutes.similar,
          { body: { item_id: t.item_id, mode: mode.value as 'similar' | 'roots' | 'niche', limit: Number(limit.value), radial_spread: Number(spread.value) } },
          { scoped: true },
        );
        seed = { id: r.seed_item_id, disc: r.seed_disc };
        hits = new Set(r.results.map((x) => x.item_id));
        const modeText = r.mode === 'roots' ? 'roots of' : r.mode === 'niche' ? 'niche songs beyond' : 'songs similar to';
        say(out, `${r.count} ${modeText} ${trackLabel(t)} (radius ${r.seed_radius.toFixed(3)}).`);
        picked.replaceChildren(
          h('p', {}, `Selected: ${trackLabel(t)} `, h('a', { href: similarHref(t), text: 'Similar songs' })),
          h(
            'div',
            { class: 'toolbar' },
            h('button', { type: 'button', text: 'Journey from here', onclick: () => setEnd('start', t) }),
            h('button', { type: 'button', text: 'Journey to here', onclick: () => setEnd('end', t) }),
          ),
        );
        results.replaceChildren(
          r.count
            ? trackTable(`${r.mode === 'similar' ? 'Similar' : r.mode === 'roots' ? 'Roots' : 'Niche'} (${r.count})`, r.results, [
                { header: 'Radius', cell: (x) => x.hyperbolic_radius.toFixed(3) },
                { header: 'Distance', cell: (x) => x.distance.toFixed(3) },
                { header: 'Genre', cell: (x) => x.top_genre ?? '' },
              ])
            : '',
        );
        redraw();
      } catch (err) {
        say(out, errText(err), 'error');
      }
    }

    function setEnd(which: 'start' | 'end', t: Song): void {
      if (which === 'start') start = t;
      else end = t;
      startOut.textContent = `Start: ${start ? trackLabel(start) : 'none'}`;
      endOut.textContent = `End: ${end ? trackLabel(end) : 'none'}`;
      journeyBtn.disabled = !(start && end);
    }

    journeyBtn.addEventListener('click', () =>
      busy(journeyBtn, journeyOut, async () => {
        if (!start || !end) return;
        const r = await call(hyperbolicRoutes.journey, { body: { start_item_id: start.item_id, end_item_id: end.item_id, length: Number(length.value), ancestry_dive: Number(dive.value) } }, { scoped: true });
        journey = r;
        say(journeyOut, `${r.count} songs along a path of hyperbolic length ${r.geodesic_length.toFixed(3)}; nearest the centre at radius ${r.apex.radius.toFixed(3)}.`);
        journeyResults.replaceChildren(
          trackTable(`Journey (${r.count})`, r.results, [
            { header: 'At', cell: (x) => `${Math.round(x.t * 100)} %` },
            { header: 'Radius', cell: (x) => x.hyperbolic_radius.toFixed(3) },
            { header: 'Off path', cell: (x) => x.distance.toFixed(3) },
          ]),
        );
        redraw();
      }),
    );

    /** Shows one tree node: breadcrumbs to the root, then its folders (buttons) or songs (links). */
    async function openNode(id: string, trail: Array<{ id: string; name: string }>): Promise<void> {
      try {
        const r: HyperbolicTreeResponse = await call(hyperbolicRoutes.tree, { query: { node_id: id } }, { scoped: true });
        const n = r.node;
        const here = [...trail, { id: n.id, name: n.name }];
        crumbs.replaceChildren(
          ...here.map((c, i) => (i === here.length - 1 ? h('span', { text: c.name, 'aria-current': 'page' }) : h('button', { type: 'button', class: 'link', text: c.name, onclick: () => void openNode(c.id, here.slice(0, i)) }))),
        );
        say(treeOut, `${n.children_count} songs${n.items.length < n.children_count && n.items[0]?.type === 'track' ? ` (the ${n.items.length} most generic listed)` : ''}.`);
        treeList.replaceChildren(
          ...n.items.map((it) =>
            h(
              'li',
              {},
              it.type === 'folder'
                ? h('button', { type: 'button', class: 'link', text: `${it.name} (${it.children_count})`, onclick: () => void openNode(it.id, here) })
                : h('button', { type: 'button', class: 'link', text: `${trackLabel({ item_id: it.id, title: it.name, author: it.author ?? null })} · r ${it.hyperbolic_radius.toFixed(2)}`, onclick: () => void explore({ item_id: it.id, title: it.name, author: it.author ?? null, album: it.album ?? null }) }),
            ),
          ),
        );
      } catch (err) {
        say(treeOut, errText(err), 'error');
      }
    }

    const pointAt = (ev: MouseEvent) => {
      const box = canvas.getBoundingClientRect();
      return nearestDrawn(discs, ev.clientX - box.left, ev.clientY - box.top, size, 10);
    };
    canvas.addEventListener('click', (ev) => {
      const i = pointAt(ev);
      if (i >= 0) void explore(points[i]!);
    });
    canvas.addEventListener('mousemove', (ev) => {
      const i = pointAt(ev);
      if (i < 0) {
        tip.hidden = true;
        return;
      }
      const p = points[i]!;
      const [x, y] = discToScreen(discs[i]!, size);
      tip.textContent = `${trackLabel(p)} · radius ${p.hyperbolic_radius.toFixed(3)}${p.top_genre ? ` · ${p.top_genre}` : ''}`;
      tip.style.left = `${Math.min(x + 8, size - 160)}px`;
      tip.style.top = `${y + 8}px`;
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', () => (tip.hidden = true));
    canvas.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter' || points.length === 0) return;
      ev.preventDefault();
      let best = 0;
      points.forEach((p, i) => {
        if (p.hyperbolic_radius < points[best]!.hyperbolic_radius) best = i;
      });
      void explore(points[best]!);
    });
    reload.addEventListener('click', () => void load());
    const resize = new ResizeObserver(() => redraw());
    resize.observe(wrap);
    void load();
    void openNode('root', []);
    return () => {
      resize.disconnect();
      if (frame) cancelAnimationFrame(frame);
    };
  },
};
export default page;
