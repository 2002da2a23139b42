/**
 * Steering controls of the text search (Search page): pick a concept (GET /api/clap/concepts of the selected
 * server, grouped by kind, loaded when the controls are first opened), "more" or "less" of it and a strength,
 * then add it to the list POST /api/clap/search sends as `steering: [{concept, weight}]` (weight = strength for
 * "more", -strength for "less"; at most STEER_MAX_CONCEPTS concepts, each once).
 */
import { CONCEPT_KINDS, STEER_MAX_CONCEPTS, semanticRoutes, type ClapConceptsResponse, type SteeringItem } from '@polyphony/contracts';
import { describeSteering, withSteering } from './steering-logic';
import { call } from './api';
import { errText, field, h, msg, say } from './dom';

export { describeSteering };

/** The controls and the current list. */
export function steeringControls(): { element: HTMLElement; items: () => SteeringItem[] } {
  let items: SteeringItem[] = [];
  let loaded = false;
  const concept = h('select', { disabled: true }, h('option', { value: '', text: 'Loading concepts…' }));
  const direction = h('select', {}, h('option', { value: 'more', text: 'more of it' }), h('option', { value: 'less', text: 'less of it' }));
  const strength = h('input', { type: 'range', min: '0.1', max: '1', step: '0.1', value: '0.5' });
  const shown = h('output', { text: '0.5' });
  strength.addEventListener('input', () => (shown.textContent = strength.value));
  const add = h('button', { type: 'button', text: 'Add concept', disabled: true });
  const list = h('ul', { class: 'steering', 'aria-label': 'Steering concepts' });
  const out = msg();

  const draw = () => {
    list.replaceChildren(
      ...items.map((i) =>
        h(
          'li',
          {},
          `${describeSteering([i])} `,
          h('button', {
            type: 'button',
            class: 'link',
            text: 'Remove',
            'aria-label': `Remove ${i.concept}`,
            onclick: () => {
              items = items.filter((x) => x !== i);
              draw();
            },
          }),
        ),
      ),
    );
    add.disabled = !concept.value || items.length >= STEER_MAX_CONCEPTS;
  };
  const fill = (r: ClapConceptsResponse) => {
    const steerable = r.concepts.filter((c) => c.steerable);
    concept.replaceChildren(
      h('option', { value: '', text: steerable.length ? 'Choose a concept' : 'No concept can steer yet' }),
      ...CONCEPT_KINDS.map((kind) => {
        const of = r.concepts.filter((c) => c.kind === kind);
        return of.length
          ? h('optgroup', { label: kind }, ...of.map((c) => h('option', { value: c.name, disabled: !c.steerable, text: `${c.name} (${c.songs} songs)` })))
          : null;
      }).filter((x): x is HTMLOptGroupElement => x !== null),
    );
    concept.disabled = steerable.length === 0;
    if (!steerable.length) say(out, `Too few of the ${r.tagged_songs} tagged songs differ on any concept to steer by it.`, 'info');
  };
  concept.addEventListener('change', draw);
  add.addEventListener('click', () => {
    if (!concept.value) return;
    const w = Number(strength.value);
    items = withSteering(items, { concept: concept.value, weight: direction.value === 'less' ? -w : w });
    draw();
  });

  const element = h(
    'details',
    { class: 'steer' },
    h('summary', { text: 'Steer the results (more or less of a concept)' }),
    h('div', { class: 'inline' }, field('Concept', concept), field('Direction', direction), field('Strength', strength, '0.1 to 1; 1 weighs like one word of the description'), shown, add),
    list,
    out,
  );
  element.addEventListener('toggle', () => {
    if (!(element as HTMLDetailsElement).open || loaded) return;
    loaded = true;
    call(semanticRoutes.clapConcepts, {}, { scoped: true })
      .then(fill)
      .catch((err: unknown) => {
        loaded = false;
        concept.replaceChildren(h('option', { value: '', text: 'Concepts unavailable' }));
        say(out, errText(err), 'error');
      });
  });
  return { element, items: () => [...items] };
}
