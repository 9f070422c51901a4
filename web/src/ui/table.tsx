// Pieces every dashboard table repeats: the header row and the link to a commit.
import { projectPath } from '../router.js';
import { shortSha } from './format.js';

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
