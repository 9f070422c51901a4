// A test's state as a word with its colour (the word is always there: colour is never the only signal).
import type { TestState } from '../lib/state.js';

export function StatePill({ state }: { state: TestState }) {
  return <span class={`state state-${state}`}>{state}</span>;
}
