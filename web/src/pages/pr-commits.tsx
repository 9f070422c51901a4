// A pull request's commits, newest first, each with its gate verdict and counts (pr.commits); the
// latest opens on its full summary, an older one loads its own when opened.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Outputs } from '../api.js';
import { shortSha, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async } from '../ui/states.js';

type PrCommit = Outputs['pr']['commits']['commits'][number];

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * The commit's status as one word: blocked whenever the gate blocks; pass once every job's latest
 * run is in and the gate passes; pending otherwise (no verdict yet, or a job still running or
 * canceled). The same status as the commit's header (client/src/contract/pr-summary.ts prStatusOf).
 */
export function verdictWord(c: PrCommit): 'pass' | 'blocked' | 'pending' {
  if (!c.gate) return 'pending';
  if (c.gate.verdict === 'block' || c.status === 'blocked') return 'blocked';
  return c.status === null || c.status === 'passed' ? 'pass' : 'pending';
}

export function PrCommits({
  slug,
  data,
  latestSha,
  latest,
  view,
}: {
  slug: string;
  data: Outputs['pr']['commits'];
  /** The commit `latest` shows. */
  latestSha: string;
  latest: ComponentChildren;
  /** The full view of an older commit, given its summary. */
  view: (summary: Outputs['pr']['summary']) => ComponentChildren;
}) {
  const blocked = data.commits.filter((c) => verdictWord(c) === 'blocked').length;
  return (
    <section aria-labelledby="pr-commits-title" class="pr-commits">
      <h2 id="pr-commits-title">
        {plural(data.commits.length, 'commit')}
        {data.more ? ' (the newest)' : ''}
        {blocked ? <small class="muted"> · {blocked} blocked</small> : null}
      </h2>
      {data.commits.map((c, i) => (
        <PrCommitItem key={c.commitSha} slug={slug} c={c} initiallyOpen={i === 0}>
          {c.commitSha === latestSha ? () => latest : () => <OlderCommit slug={slug} sha={c.commitSha} view={view} />}
        </PrCommitItem>
      ))}
    </section>
  );
}

function PrCommitItem({ c, initiallyOpen, children }: { slug: string; c: PrCommit; initiallyOpen: boolean; children: () => ComponentChildren }) {
  const [open, setOpen] = useState(initiallyOpen);
  const word = verdictWord(c);
  return (
    <details class={`pr-commit verdict-${word === 'pass' ? 'pass' : word === 'blocked' ? 'fail' : 'pending'}`} data-testid="pr-commit" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <code>{shortSha(c.commitSha)}</code>{' '}
        <span class={`pill verdict-word verdict-word-${word}`} data-testid="pr-commit-verdict">
          {word}
        </span>{' '}
        <span class="pr-commit-counts">
          {c.failed} failed, {c.flaky} flaky
          {c.gate ? <span data-testid="pr-commit-counts"> · {c.gate.countsText}</span> : null} · {plural(c.runs, 'run')} · <span class="muted">{when(c.lastRunAt)}</span>
        </span>
      </summary>
      {open ? children() : null}
    </details>
  );
}

function OlderCommit({ slug, sha, view }: { slug: string; sha: string; view: (summary: Outputs['pr']['summary']) => ComponentChildren }) {
  const q = useQuery(() => api(slug).pr.summary.query({ commitSha: sha }), [slug, sha]);
  return (
    <Async q={q} what="the commit summary">
      {(data) => view(data)}
    </Async>
  );
}
