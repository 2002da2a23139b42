/** Pure helpers of the steering controls (steering.ts). */
import { STEER_MAX_CONCEPTS, type SteeringItem } from '@polyphony/contracts';

/** "more piano (0.5), less drums (1)": the steering as a person reads it. */
export function describeSteering(items: readonly SteeringItem[]): string {
  return items.map((i) => `${i.weight >= 0 ? 'more' : 'less'} ${i.concept} (${Math.abs(i.weight)})`).join(', ');
}

/** Adds or replaces a concept in the list (same concept: the new weight), keeping at most STEER_MAX_CONCEPTS. */
export function withSteering(items: readonly SteeringItem[], add: SteeringItem): SteeringItem[] {
  const rest = items.filter((i) => i.concept !== add.concept);
  return rest.length >= STEER_MAX_CONCEPTS ? [...rest] : [...rest, add];
}
