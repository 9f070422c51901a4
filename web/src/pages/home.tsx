// `/`: a project session goes to its board; the admin picks a project.
import { useEffect } from 'preact/hooks';
import { api } from '../api.js';
import type { PageProps } from '../app.js';
import { navigate, projectPath } from '../router.js';
import { isAdmin, useSession } from '../session.js';
import { useQuery } from '../ui/query.js';
import { Async, Empty, PageTitle, TableScroll } from '../ui/states.js';
import { HeadRow } from '../ui/table.js';

export function HomePage(_: PageProps) {
  const { session } = useSession();
  const slug = session.principal.projectSlug;
  useEffect(() => {
    if (!isAdmin(session) && slug) navigate(projectPath(slug, 'flaky'), { replace: true });
  }, [session, slug]);
  if (!isAdmin(session)) return null;
  return <ProjectPicker />;
}

function ProjectPicker() {
  const q = useQuery(() => api(null).projects.list.query(), []);
  return (
    <>
      <PageTitle title="Projects">Signed in with the admin token: pick a project.</PageTitle>
      <Async q={q} what="projects">
        {(data) =>
          data.items.length === 0 ? (
            <Empty title="No projects yet">
              <p>
                Create one with <code>npx flakehouse project create SLUG</code>.
              </p>
            </Empty>
          ) : (
            <TableScroll label="Projects">
              <table>
                <HeadRow cols={['Project', 'Name', 'Pages']} />
                <tbody>
                  {data.items.map((p) => (
                    <tr key={p.slug}>
                      <td>
                        <a href={projectPath(p.slug, 'flaky')}>{p.slug}</a>
                      </td>
                      <td>{p.name}</td>
                      <td class="links">
                        <a href={projectPath(p.slug, 'runs')}>runs</a> · <a href={projectPath(p.slug, 'health')}>health</a> ·{' '}
                        <a href={projectPath(p.slug, 'settings')}>settings</a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )
        }
      </Async>
      <p>
        Operators: <a href="/pipeline">the pipeline</a> (graph, counters, queue, dead jobs).
      </p>
    </>
  );
}
