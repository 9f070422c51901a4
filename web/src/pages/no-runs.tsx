// The empty state of a project with no data: the two ways to send results, ready to paste, with
// this page's own origin and the project's slug.
import { Empty } from '../ui/states.js';

export function NoRunsHelp({ slug, what }: { slug: string; what: string }) {
  const origin = window.location.origin;
  const curl = `jq -n --rawfile xml report.xml --arg sha "$(git rev-parse HEAD)" \\
  '{idempotencyKey: ("local-" + $sha), xml: $xml,
    resource: {ciProvider: "local", commitSha: $sha, branch: "main", trigger: "push"}}' |
curl -sS -X POST ${origin}/v1/ingest/junit \\
  -H "Authorization: Bearer $SERVICE_TOKEN" -H 'Content-Type: application/json' --data-binary @-`;
  const report = `export SERVICE_ENDPOINT=${origin}
export SERVICE_TOKEN=fh_…   # a token of project ${slug} with the ingest scope
npx flakehouse report 'test-results/**/*.xml'`;
  return (
    <Empty title={what}>
      <p>
        Project <code>{slug}</code> has no test results yet. Send a JUnit XML report from CI (or your machine) with its token (<code>ingest</code> scope), then reload this page.
      </p>
      <p>With the CLI:</p>
      <pre data-testid="report-command">
        <code>{report}</code>
      </pre>
      <p>
        Or with <code>curl</code> (<code>POST /v1/ingest/junit</code>):
      </p>
      <pre data-testid="curl-command">
        <code>{curl}</code>
      </pre>
    </Empty>
  );
}
