// Error clusters as the dashboard lists them: failing executions grouped by their cluster
// (assigned by the signature processor), with occurrences, tests affected, first and last seen,
// an example, and the cluster's RCA analysis when there is one.
import { toIso } from '../../client/src/contract/time.js';
import { toNumber, type Store } from './client.js';

export interface ClusterSummary {
  clusterId: string;
  occurrences: number;
  testsAffected: number;
  firstSeenAt: string;
  lastSeenAt: string;
  errorType: string;
  errorMessage: string;
  exampleExecutionId: string;
  exampleTestId: string;
  /** The example's test, named: its title, suite and file. */
  exampleTitle: string;
  exampleSuite: string;
  exampleFilePath: string;
  rca: { status: string; summary: string; likelyCause: string; suggestedAction: string; confidence: number } | null;
}

export interface ClusterFilter {
  /** Only this test's executions (the test page). */
  testId?: string;
  /** Executions started within the last `days` days. */
  days: number;
  limit: number;
  now: number;
}

export class ClusterRepo {
  constructor(private readonly store: Store) {}

  /** Clusters by occurrences, most first. */
  async list(projectId: string, f: ClusterFilter): Promise<ClusterSummary[]> {
    const rows = await this.store.query<{
      cluster_id: string;
      occurrences: number | string;
      tests: number | string;
      first_ms: number | string;
      last_ms: number | string;
      error_type: string;
      error_message: string;
      example: string;
      example_test: string;
      example_title: string;
      example_suite: string;
      example_file: string;
    }>(
      `SELECT cluster_id, count() AS occurrences, uniqExact(test_id) AS tests,
              toUnixTimestamp64Milli(min(started_at)) AS first_ms, toUnixTimestamp64Milli(max(started_at)) AS last_ms,
              argMax(error_type, started_at) AS error_type, argMax(error_message, started_at) AS error_message,
              argMax(id, started_at) AS example, argMax(test_id, started_at) AS example_test,
              argMax(title, started_at) AS example_title, argMax(suite, started_at) AS example_suite, argMax(file_path, started_at) AS example_file
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} ${f.testId !== undefined ? 'AND test_id = {testId:UUID}' : ''}
         AND cluster_id != '' AND status IN ('fail', 'flaky')
         AND started_at >= fromUnixTimestamp64Milli({since:Int64})
       GROUP BY cluster_id
       ORDER BY occurrences DESC, cluster_id LIMIT {limit:UInt32}`,
      { projectId, testId: f.testId ?? '', since: f.now - f.days * 86_400_000, limit: f.limit },
    );
    const ids = rows.map((r) => r.cluster_id);
    const analyses =
      ids.length === 0
        ? []
        : await this.store.query<{ cluster_id: string; status: string; summary: string; likely_cause: string; suggested_action: string; confidence: number }>(
            `SELECT cluster_id, status, summary, likely_cause, suggested_action, confidence FROM ${this.store.table('rca_analyses')} FINAL
             WHERE project_id = {projectId:UUID} AND cluster_id IN {ids:Array(String)}`,
            { projectId, ids },
          );
    const byCluster = new Map(analyses.map((a) => [a.cluster_id, a]));
    return rows.map((r) => {
      const a = byCluster.get(r.cluster_id);
      return {
        clusterId: r.cluster_id,
        occurrences: toNumber(r.occurrences),
        testsAffected: toNumber(r.tests),
        firstSeenAt: toIso(toNumber(r.first_ms)),
        lastSeenAt: toIso(toNumber(r.last_ms)),
        errorType: r.error_type,
        errorMessage: r.error_message,
        exampleExecutionId: r.example,
        exampleTestId: r.example_test,
        exampleTitle: r.example_title,
        exampleSuite: r.example_suite,
        exampleFilePath: r.example_file,
        rca: a
          ? { status: a.status, summary: a.summary, likelyCause: a.likely_cause, suggestedAction: a.suggested_action, confidence: Math.round(toNumber(a.confidence) * 1000) / 1000 }
          : null,
      };
    });
  }
}
