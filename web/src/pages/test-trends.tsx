// The test page's trends card: the commit where the test first flaked, the commit it broke at
// (linked to GitHub when its run came from there, else to the commit's page here), and a
// `slowed` marker when its median duration of the last 7 days regressed against the 28 before.
import { api, type Outputs } from '../api.js';
import { duration, shortSha, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { CommitLink } from '../ui/table.js';

type Trends = Outputs['test']['trends'];

export function TestTrendsCard({ slug, id }: { slug: string; id: string }) {
  const q = useQuery(() => api(slug).test.trends.query({ testIdentityId: id }), [slug, id]);
  const t = q.data;
  return (
    <article data-testid="test-trends">
      <small class="muted">Trends</small>
      {q.error ? <p class="muted">Trends are not available right now.</p> : !t ? <p class="muted">Loading…</p> : <TrendLines slug={slug} t={t} />}
    </article>
  );
}

function TrendLines({ slug, t }: { slug: string; t: Trends }) {
  const d = t.duration;
  return (
    <>
      {d.slowed ? (
        <p data-testid="test-slowed">
          <mark class="slowed">slowed</mark>: p50 {duration(d.baselineP50Ms)} → <strong>{duration(d.recentP50Ms)}</strong>
          <br />
          <small class="muted">
            median of the last {d.recentDays} days against the {d.baselineDays} before ({d.recentSamples} and {d.baselineSamples} passing runs)
          </small>
        </p>
      ) : d.recentP50Ms !== null ? (
        <p data-testid="test-duration">
          p50 {duration(d.recentP50Ms)} <small class="muted">(last {d.recentDays} days)</small>
        </p>
      ) : null}
      {t.broke ? (
        <p data-testid="test-broke-at">
          broke at <Commit slug={slug} sha={t.broke.commitSha} url={t.broke.commitUrl} /> ({when(t.broke.at)})
        </p>
      ) : null}
      {t.firstFlaked ? (
        <p data-testid="test-first-flaked">
          first flaked at <Commit slug={slug} sha={t.firstFlaked.commitSha} url={t.firstFlaked.commitUrl} /> ({when(t.firstFlaked.at)})
        </p>
      ) : null}
      {!d.slowed && d.recentP50Ms === null && !t.broke && !t.firstFlaked ? <p class="muted">Never flaked; no recent passing runs to time.</p> : null}
    </>
  );
}

/** On GitHub when the run came from there, else the commit's page here. */
function Commit({ slug, sha, url }: { slug: string; sha: string; url: string | null }) {
  if (!url) return <CommitLink slug={slug} sha={sha} />;
  return (
    <a href={url} target="_blank" rel="noopener noreferrer" title="the commit on GitHub">
      <code>{shortSha(sha)}</code>
    </a>
  );
}
