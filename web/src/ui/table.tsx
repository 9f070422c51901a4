// Pieces every dashboard table repeats: the header row, the link to a commit and a run's or an execution's first cells.
import { projectPath } from '../router.js';
import { shortSha, when } from './format.js';
import { Status } from './status.js';
import { Term } from './term.js';

/**
 * A column header: its text, or `{ label, num, title }`: `num` right-aligns a number column, `title`
 * is the column's definition (on hover and keyboard focus, web/src/ui/term.tsx); null leaves it out.
 */
export type Column = string | { label: string; num?: boolean; title?: string } | null;

export function HeadRow({ cols }: { cols: readonly Column[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) =>
          c === null ? null : typeof c === 'string' ? (
            <th key={c} scope="col">
              {c}
            </th>
          ) : (
            <th key={c.label} scope="col" class={c.num ? 'num' : undefined}>
              {c.title ? <Term def={c.title}>{c.label}</Term> : c.label}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}

/** A commit's short sha, linked to its page; never wraps. */
export function CommitLink({ slug, sha }: { slug: string; sha: string }) {
  return (
    <a href={projectPath(slug, 'commits', sha)} class="sha">
      <code>{shortSha(sha)}</code>
    </a>
  );
}

/** When (linked to the run or execution), status, branch and commit: the first cells of a run's or an execution's row. */
export function StartCells({
  slug,
  href,
  startedAt,
  status,
  branch,
  commitSha,
  job = null,
}: {
  slug: string;
  href: string;
  startedAt: string;
  status: string;
  branch: string;
  commitSha: string;
  /** The run's CI job, shown under its branch. */
  job?: string | null;
}) {
  return (
    <>
      <td class="nowrap" data-label="Started">
        <a href={href}>{when(startedAt)}</a>
      </td>
      <td data-label="Status">
        <Status status={status} />
      </td>
      <td class="branch" data-label="Branch">
        {branch}
        {job ? (
          <>
            <br />
            <small class="muted" data-testid="run-job">
              job {job}
            </small>
          </>
        ) : null}
      </td>
      <td class="nowrap" data-label="Commit">
        <CommitLink slug={slug} sha={commitSha} />
      </td>
    </>
  );
}
