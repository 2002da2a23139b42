/**
 * Map (PER SERVER): the catalogue of the selected server as an interactive 2-D scatter from
 * GET /api/map. One canvas, points written straight into an ImageData buffer (no DOM node per
 * point), so 100k points redraw in a few milliseconds; a uniform grid finds the point under the
 * pointer. Zoom (wheel, buttons, + / -), pan (drag, arrow keys), hover shows the track, colour by
 * top tag, top mood, tempo, energy or one mood's score; click (or Enter: the point nearest the centre) selects a
 * track, with links to seed Similar songs or Alchemy with it. Lasso (the Lasso button, or Shift+drag): a
 * free-hand outline selects every point inside it (map-logic pointsInLasso); "Select songs in view" selects
 * what the zoomed view shows (the keyboard way); the selected songs are listed
 * with Save as playlist on the selected server, Use in alchemy (first ALCHEMY_SEEDS songs) and Similar songs.
 */
import { featureRoutes, type MapResponse } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, say, select } from '../dom';
import { buildGrid, nearest, PALETTE, percentileScale, pointsInLasso, rampColor, rgba32, Viewport, boundsOf, type Grid } from '../map-logic';
import type { Page } from '../page';
import { parseLabelScores, similarHref, trackLabel } from '../track-format';
import { playlistSaver, trackTable } from '../tracks';

type Item = MapResponse['items'][number];
const MOODS = ['danceable', 'aggressive', 'happy', 'party', 'relaxed', 'sad'];
/** Songs of a lasso selection handed to Alchemy as ADD anchors. */
const ALCHEMY_SEEDS = 10;
/** Rows of a lasso selection listed in the table (all of them are saved as the playlist). */
const LISTED_MAX = 200;

/** A legend entry; the colour is set through the CSSOM (allowed by the CSP, unlike a style attribute). */
function swatch(colour: string, text: string): HTMLSpanElement {
  const el = h('span', { text });
  el.style.setProperty('--c', colour);
  return el;
}

const page: Page = {
  title: 'Map',
  tag: 'PER SERVER',
  render(root) {
    const out = msg();
    const percent = select([['25', '25 %'], ['50', '50 %'], ['75', '75 %'], ['100', '100 %']], '100');
    const colourBy = select([['tag', 'Top tag'], ['mood', 'Top mood'], ['tempo', 'Tempo'], ['energy', 'Energy'], ...MOODS.map((m): [string, string] => [`score:${m}`, `${m} score`])], 'tag');
    const load = h('button', { type: 'button', text: 'Reload' });
    const zoomIn = h('button', { type: 'button', text: 'Zoom in', 'aria-label': 'Zoom in' });
    const zoomOut = h('button', { type: 'button', text: 'Zoom out', 'aria-label': 'Zoom out' });
    const reset = h('button', { type: 'button', text: 'Reset view' });
    const lassoBtn = h('button', { type: 'button', text: 'Lasso', 'aria-pressed': 'false', title: 'Draw around songs to select them (or Shift+drag)' });
    // The keyboard way to a selection: zoom and pan to the songs, then select what the view shows.
    const inView = h('button', { type: 'button', text: 'Select songs in view' });
    const canvas = h('canvas', { tabindex: '0', role: 'img', 'aria-label': 'Map of the songs. Arrow keys pan, + and - zoom, 0 resets, Enter selects the song nearest the centre.' });
    const tip = h('div', { class: 'map-tip', role: 'tooltip', hidden: true });
    const legend = h('div', { class: 'legend', 'aria-label': 'Colour legend' });
    const picked = h('div', { class: 'picked', 'aria-live': 'polite' });
    const stats = h('p', { class: 'muted small' });
    const lassoOut = h('section', { class: 'lasso-selection', 'aria-live': 'polite', hidden: true });
    const wrap = h('div', { class: 'map-wrap' }, canvas, tip);
    root.append(
      h('div', { class: 'toolbar' }, field('Share of songs', percent), field('Colour by', colourBy), load, zoomIn, zoomOut, reset, lassoBtn, inView),
      out,
      wrap,
      legend,
      stats,
      picked,
      lassoOut,
    );

    let items: Item[] = [];
    let xs = new Float32Array(0);
    let ys = new Float32Array(0);
    let colours = new Uint32Array(0);
    let grid: Grid | undefined;
    const view = new Viewport(1, 1);
    let dpr = 1;
    let frame = 0;
    let hover = -1;
    let selected = -1;
    /** Lasso selection: point indices (ascending) and a per-point flag for drawing. */
    let lassoed: number[] = [];
    let lassoFlag = new Uint8Array(0);
    /** The outline being drawn, in screen pixels (CSS). */
    let outline: number[] | undefined;
    let lassoMode = false;
    let lastMs = 0;
    const ctx = canvas.getContext('2d')!;
    let img: ImageData | undefined;
    let px: Uint32Array | undefined;

    const recolour = () => {
      const mode = colourBy.value;
      colours = new Uint32Array(items.length);
      if (mode === 'tempo' || mode === 'energy') {
        const values = items.map((it) => it[mode] ?? null);
        const scale = percentileScale(values);
        const ramp = Array.from({ length: 11 }, (_, i) => rgba32(rampColor(i / 10)));
        const none = rgba32('#9e9e9e');
        for (let i = 0; i < items.length; i++) {
          const v = values[i];
          colours[i] = scale && typeof v === 'number' ? ramp[Math.round(scale.t(v) * 10)]! : none;
        }
        const fmt = (v: number) => (mode === 'tempo' ? `${Math.round(v)} BPM` : v.toPrecision(3));
        legend.replaceChildren(
          ...(scale ? [swatch(rampColor(0), `${mode} ≤ ${fmt(scale.lo)}`), swatch(rampColor(0.5), fmt((scale.lo + scale.hi) / 2)), swatch(rampColor(1), `≥ ${fmt(scale.hi)}`)] : []),
          swatch('#9e9e9e', `no ${mode}`),
        );
        return;
      }
      if (mode.startsWith('score:')) {
        const label = mode.slice(6);
        const ramp = Array.from({ length: 11 }, (_, i) => rgba32(rampColor(i / 10)));
        for (let i = 0; i < items.length; i++) {
          const s = parseLabelScores(items[i]!.other_features).find((x) => x.label === label)?.score;
          colours[i] = s === undefined ? rgba32('#9e9e9e') : ramp[Math.round(Math.min(1, Math.max(0, s)) * 10)]!;
        }
        legend.replaceChildren(...[0, 0.5, 1].map((t) => swatch(rampColor(t), `${label} ${Math.round(t * 100)}%`)), swatch('#9e9e9e', 'no score'));
        return;
      }
      const labelOf = (it: Item) => parseLabelScores(mode === 'tag' ? it.mood_vector : it.other_features)[0]?.label ?? 'untagged';
      const counts = new Map<string, number>();
      const labels = items.map(labelOf);
      for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
      const top = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, PALETTE.length - 1).map(([l]) => l);
      const idx = new Map(top.map((l, i) => [l, i]));
      const other = '#9e9e9e';
      for (let i = 0; i < labels.length; i++) {
        const k = idx.get(labels[i]!);
        colours[i] = rgba32(k === undefined ? other : PALETTE[k]!);
      }
      legend.replaceChildren(...top.map((l, i) => swatch(PALETTE[i]!, `${l} (${counts.get(l)})`)), counts.size > top.length ? swatch(other, 'other') : '');
    };

    const draw = () => {
      frame = 0;
      const t0 = performance.now();
      const w = canvas.width;
      const hgt = canvas.height;
      if (w === 0 || hgt === 0) return;
      // One pixel buffer per canvas size, cleared per frame (no 3 MB allocation per redraw).
      if (!img || img.width !== w || img.height !== hgt) {
        img = ctx.createImageData(w, hgt);
        px = new Uint32Array(img.data.buffer);
      } else px!.fill(0);
      const pixels = px!;
      // Point size by count: few points stay visible, 100k do not become one blob.
      const base = xs.length < 1000 ? 6 : xs.length < 20_000 ? 3 : 2;
      const size = Math.max(2, Math.round(base * dpr));
      const half = Math.floor(size / 2);
      const mark = rgba32('#d00000');
      for (let i = 0; i < xs.length; i++) {
        const sx = Math.round(view.toScreenX(xs[i]!) * dpr) - half;
        const sy = Math.round(view.toScreenY(ys[i]!) * dpr) - half;
        if (sx < 0 || sy < 0 || sx >= w - size || sy >= hgt - size) continue;
        const c = lassoFlag[i] ? mark : colours[i]!;
        for (let dy = 0; dy < size; dy++) {
          const row = (sy + dy) * w + sx;
          for (let dx = 0; dx < size; dx++) pixels[row + dx] = c;
        }
      }
      ctx.putImageData(img, 0, 0);
      for (const [i, colour] of [
        [selected, '#d00'],
        [hover, getComputedStyle(canvas).color || '#000'],
      ] as Array<[number, string]>) {
        if (i < 0) continue;
        ctx.beginPath();
        ctx.arc(view.toScreenX(xs[i]!) * dpr, view.toScreenY(ys[i]!) * dpr, 6 * dpr, 0, Math.PI * 2);
        ctx.lineWidth = 2 * dpr;
        ctx.strokeStyle = colour;
        ctx.stroke();
      }
      if (outline && outline.length >= 4) {
        ctx.beginPath();
        ctx.moveTo(outline[0]! * dpr, outline[1]! * dpr);
        for (let k = 2; k < outline.length; k += 2) ctx.lineTo(outline[k]! * dpr, outline[k + 1]! * dpr);
        ctx.closePath();
        ctx.setLineDash([6 * dpr, 4 * dpr]);
        ctx.lineWidth = 1.5 * dpr;
        ctx.strokeStyle = '#d00000';
        ctx.stroke();
        ctx.setLineDash([]);
      }
      lastMs = performance.now() - t0;
      canvas.dataset.renderMs = lastMs.toFixed(1);
      stats.textContent = `${items.length} songs · last redraw ${lastMs.toFixed(1)} ms`;
    };
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(draw);
    };
    const resize = () => {
      dpr = window.devicePixelRatio || 1;
      const r = canvas.getBoundingClientRect();
      const oldW = view.width;
      canvas.width = Math.max(1, Math.round(r.width * dpr));
      canvas.height = Math.max(1, Math.round(r.height * dpr));
      view.width = r.width;
      view.height = r.height;
      if (oldW <= 1 && xs.length) view.fit(boundsOf(xs, ys));
      schedule();
    };
    const ro = new ResizeObserver(resize);
    ro.observe(canvas);

    const showTip = (i: number, sx: number, sy: number) => {
      if (i < 0) {
        tip.hidden = true;
        return;
      }
      const it = items[i]!;
      const moods = parseLabelScores(it.mood_vector).slice(0, 3).map((m) => m.label).join(', ');
      tip.replaceChildren(h('strong', { text: trackLabel(it) }), moods ? h('div', { class: 'muted', text: moods }) : '');
      tip.hidden = false;
      tip.style.left = `${Math.min(sx + 12, view.width - 200)}px`;
      tip.style.top = `${sy + 12}px`;
    };
    const select_ = (i: number) => {
      selected = i;
      schedule();
      if (i < 0) return picked.replaceChildren();
      const it = items[i]!;
      const alch = new URLSearchParams({ item_id: it.item_id, label: trackLabel(it) });
      picked.replaceChildren('Selected: ', trackLabel(it), ' · ', h('a', { href: similarHref(it), text: 'Similar songs' }), ' · ', h('a', { href: `#/alchemy?${alch.toString()}`, text: 'Use in alchemy' }));
    };
    const saver = playlistSaver(() => lassoed.map((i) => items[i]!.item_id), () => 'Map selection');
    const showLasso = (sel: number[]) => {
      lassoed = sel;
      lassoFlag = new Uint8Array(items.length);
      for (const i of sel) lassoFlag[i] = 1;
      schedule();
      if (sel.length === 0) {
        saver.show(false);
        lassoOut.hidden = sel.length === 0 && !outline;
        lassoOut.replaceChildren(h('p', { class: 'muted', text: 'The lasso holds no song.' }));
        return;
      }
      const songs = sel.map((i) => items[i]!);
      const alch = new URLSearchParams();
      for (const it of songs.slice(0, ALCHEMY_SEEDS)) {
        alch.append('item_id', it.item_id);
        alch.append('label', trackLabel(it));
      }
      const clear = h('button', { type: 'button', text: 'Clear selection' });
      clear.addEventListener('click', () => {
        showLasso([]);
        lassoOut.hidden = true;
      });
      lassoOut.hidden = false;
      lassoOut.replaceChildren(
        h('h3', { text: `${sel.length} songs selected` }),
        h(
          'p',
          { class: 'actions' },
          h('a', { href: `#/alchemy?${alch.toString()}`, text: `Use in alchemy (${Math.min(ALCHEMY_SEEDS, sel.length)} songs)` }),
          ' · ',
          h('a', { href: similarHref(songs[0]!), text: `Similar songs to ${trackLabel(songs[0]!)}` }),
          ' ',
          clear,
        ),
        saver.element,
        h('div', { class: 'table-wrap' }, trackTable(sel.length > LISTED_MAX ? `First ${LISTED_MAX} of ${sel.length} selected songs` : 'Selected songs', songs.slice(0, LISTED_MAX))),
      );
      saver.show(true);
    };
    const setLassoMode = (on: boolean) => {
      lassoMode = on;
      lassoBtn.setAttribute('aria-pressed', String(on));
      canvas.classList.toggle('lasso', on);
    };
    lassoBtn.addEventListener('click', () => setLassoMode(!lassoMode));
    inView.addEventListener('click', () => {
      const [x0, x1, y0, y1] = [view.toDataX(0), view.toDataX(view.width), view.toDataY(view.height), view.toDataY(0)];
      showLasso(grid ? pointsInLasso(grid, xs, ys, [x0, y0, x1, y0, x1, y1, x0, y1]) : []);
    });
    const hitAt = (sx: number, sy: number) => (grid ? nearest(grid, xs, ys, view.toDataX(sx), view.toDataY(sy), 8 / view.scale) : -1);

    let drag: { x: number; y: number; moved: number } | undefined;
    canvas.addEventListener('pointerdown', (e) => {
      canvas.setPointerCapture(e.pointerId);
      if (lassoMode || e.shiftKey) {
        outline = [e.offsetX, e.offsetY];
        tip.hidden = true;
        return;
      }
      drag = { x: e.offsetX, y: e.offsetY, moved: 0 };
    });
    canvas.addEventListener('pointermove', (e) => {
      if (outline) {
        const lx = outline[outline.length - 2]!;
        const ly = outline[outline.length - 1]!;
        if (Math.abs(e.offsetX - lx) + Math.abs(e.offsetY - ly) >= 2) {
          outline.push(e.offsetX, e.offsetY);
          schedule();
        }
        return;
      }
      if (drag) {
        const dx = e.offsetX - drag.x;
        const dy = e.offsetY - drag.y;
        drag.moved += Math.abs(dx) + Math.abs(dy);
        drag.x = e.offsetX;
        drag.y = e.offsetY;
        if (drag.moved > 3) {
          view.panBy(dx, dy);
          tip.hidden = true;
          schedule();
          return;
        }
      }
      const i = hitAt(e.offsetX, e.offsetY);
      if (i !== hover) {
        hover = i;
        schedule();
      }
      showTip(i, e.offsetX, e.offsetY);
    });
    canvas.addEventListener('pointerup', (e) => {
      if (outline) {
        const poly = new Float64Array(outline.length);
        for (let k = 0; k < outline.length; k += 2) {
          poly[k] = view.toDataX(outline[k]!);
          poly[k + 1] = view.toDataY(outline[k + 1]!);
        }
        outline = undefined;
        showLasso(grid ? pointsInLasso(grid, xs, ys, poly) : []);
        return;
      }
      if (drag && drag.moved <= 3) select_(hitAt(e.offsetX, e.offsetY));
      drag = undefined;
    });
    canvas.addEventListener('pointerleave', () => {
      hover = -1;
      tip.hidden = true;
      schedule();
    });
    canvas.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        view.zoomAt(Math.exp(-e.deltaY * 0.0015), e.offsetX, e.offsetY);
        tip.hidden = true;
        schedule();
      },
      { passive: false },
    );
    canvas.addEventListener('keydown', (e) => {
      const step = 40;
      const keys: Record<string, () => void> = {
        ArrowLeft: () => view.panBy(step, 0),
        ArrowRight: () => view.panBy(-step, 0),
        ArrowUp: () => view.panBy(0, step),
        ArrowDown: () => view.panBy(0, -step),
        '+': () => view.zoomAt(1.25, view.width / 2, view.height / 2),
        '=': () => view.zoomAt(1.25, view.width / 2, view.height / 2),
        '-': () => view.zoomAt(0.8, view.width / 2, view.height / 2),
        '0': () => view.fit(boundsOf(xs, ys)),
        Enter: () => select_(grid ? nearest(grid, xs, ys, view.cx, view.cy, 1e9) : -1),
      };
      const f = keys[e.key];
      if (!f) return;
      e.preventDefault();
      f();
      schedule();
    });
    zoomIn.addEventListener('click', () => (view.zoomAt(1.5, view.width / 2, view.height / 2), schedule()));
    zoomOut.addEventListener('click', () => (view.zoomAt(1 / 1.5, view.width / 2, view.height / 2), schedule()));
    reset.addEventListener('click', () => (view.fit(boundsOf(xs, ys)), schedule()));
    colourBy.addEventListener('change', () => (recolour(), schedule()));

    const fetchMap = () =>
      busy(load, out, async () => {
        say(out, 'Loading the map…');
        const r = await call(featureRoutes.map, { query: { percent: Number(percent.value) } }, { scoped: true });
        items = r.items;
        xs = new Float32Array(items.length);
        ys = new Float32Array(items.length);
        items.forEach((it, i) => {
          xs[i] = it.embedding_2d[0];
          ys[i] = it.embedding_2d[1];
        });
        grid = buildGrid(xs, ys);
        hover = -1;
        select_(-1);
        showLasso([]);
        lassoOut.hidden = true;
        recolour();
        view.fit(boundsOf(xs, ys));
        say(out, items.length ? `${items.length} songs (${r.projection.toUpperCase()} projection).` : 'No analyzed song on this server yet.', items.length ? 'ok' : 'info');
        schedule();
      });
    load.addEventListener('click', () => void fetchMap());
    percent.addEventListener('change', () => void fetchMap());
    void fetchMap().catch((err: unknown) => say(out, errText(err), 'error'));
    return () => {
      ro.disconnect();
      if (frame) cancelAnimationFrame(frame);
    };
  },
};
export default page;
