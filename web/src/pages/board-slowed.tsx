// The board's `slowed` marker: of the page's tests, those whose median duration over the last
// 7 days regressed against the 28 before (flaky.slowed, one query per page of rows).
import { api } from '../api.js';
import { duration } from '../ui/format.js';
import { useQuery } from '../ui/query.js';

export interface Slowed {
  recentP50Ms: number | null;
  baselineP50Ms: number | null;
}

/** The page's slowed tests by id (empty until the answer, or when it fails: the marker is extra). */
export function useSlowed(slug: string, testIds: string[]): Map<string, Slowed> {
  const q = useQuery(
    async (): Promise<({ testIdentityId: string } & Slowed)[]> => (testIds.length ? (await api(slug).flaky.slowed.query({ testIdentityIds: testIds })).items : []),
    [slug, testIds],
  );
  return new Map((q.data ?? []).map((s) => [s.testIdentityId, s]));
}

export function SlowedMark({ info }: { info: Slowed | undefined }) {
  if (!info) return null;
  return (
    <>
      {' '}
      <mark class="slowed" data-testid="board-slowed" title={`p50 ${duration(info.baselineP50Ms)} → ${duration(info.recentP50Ms)} (last 7 days against the 28 before)`}>
        slowed
      </mark>
    </>
  );
}
