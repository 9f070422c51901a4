// Pieces every dashboard table repeats: the header row, the link to a commit and a run's or an execution's first cells.
import { projectPath } from '../router.js';
import { shortSha, when } from './format.js';
import { Status } from './status.js';

/** A column header: its text, or `{ label, num: true }` for a right-aligned number column; null leaves it out. */
export type Column = string | { label: string; num: true } | null;

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
            <th key={c.label} scope="col" class="num">
              {c.label}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}

export function CommitLink({ slug, sha }: { slug: string; sha: string }) {
  return (
    <a href={projectPath(slug, 'commits', sha)}>
      <code>{shortSha(sha)}</code>
    </a>
  );
}

/** When (linked to the run or execution), status, branch and commit: the first cells of a run's or an execution's row. */
export function StartCells({ slug, href, startedAt, status, branch, commitSha }: { slug: string; href: string; startedAt: string; status: string; branch: string; commitSha: string }) {
  return (
    <>
      <td class="nowrap">
        <a href={href}>{when(startedAt)}</a>
      </td>
      <td>
        <Status status={status} />
      </td>
      <td>{branch}</td>
      <td>
        <CommitLink slug={slug} sha={commitSha} />
      </td>
    </>
  );
}
