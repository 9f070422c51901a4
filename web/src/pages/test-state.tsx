// The test page's state card: the state beside the score, the commit it began with (linked to the
// commit's page, as the page's other commits are), how often a flaky test flakes.
import type { Outputs } from '../api.js';
import { RAW_RATE_DEF, STATE_TEXT, flakeShare, rawShare, type StateSince, type TestState } from '../lib/state.js';
import { Term } from '../ui/term.js';
import { when } from '../ui/format.js';
import { StatePill } from '../ui/state.js';
import { CommitLink } from '../ui/table.js';

type Detail = Outputs['test']['get'];

/** How each state's since-commit reads: broken since its first failing commit, fixed since its first passing one. */
const SINCE_WORDS: Record<TestState, string> = {
  new: 'first seen at',
  healthy: 'since',
  flaky: 'flaky since',
  broken: 'failing since',
  fixed: 'passing since',
};

export function TestStateCard({ slug, t }: { slug: string; t: Detail }) {
  const raw = rawShare(t.recentRuns);
  return (
    <article>
      <small class="muted">State</small>
      <div class="value" data-testid="test-state">
        <StatePill state={t.state} />
      </div>
      <Since slug={slug} state={t.state} since={t.stateSince} />
      {t.state === 'flaky' ? (
        <p data-testid="test-flake-rate">
          Flakes in <strong>{flakeShare(t.flakeRate)}</strong> of its runs{raw ? <> <Term def={RAW_RATE_DEF}>({raw})</Term></> : null}.
        </p>
      ) : null}
      <small>{STATE_TEXT[t.state]}</small>
    </article>
  );
}

function Since({ slug, state, since }: { slug: string; state: TestState; since: StateSince }) {
  if (!since?.commitSha) return null;
  return (
    <p data-testid="test-state-since">
      {SINCE_WORDS[state]} <CommitLink slug={slug} sha={since.commitSha} /> on <code>{since.branch}</code>
      <br />
      <small class="muted">{when(since.at)}</small>
    </p>
  );
}
