// What a project export holds (docs/contract.md §6): one dataset per project-scoped table, each with an
// explicit column allow-list. A column added to a table later (a secret, say) stays out of the
// export until someone lists it here; a project-scoped table nobody listed fails the export test.

export interface ExportColumn {
  name: string;
  /** SQL over the table's columns; default: the column itself. */
  expr: string;
  /** ClickHouse type of `expr`; default: the column's own type. */
  type?: string;
}

export interface Dataset {
  /** The `dataset` of its lines. */
  name: string;
  table: string;
  /** Latest-state tables are read FINAL: one row per key, what the API shows. */
  final: boolean;
  /** The column that holds the project id. */
  projectColumn: string;
  /** An extra condition, SQL over the table's columns. */
  where?: string;
  /** Rows per streamed block when the rows are big (default ~1 MB of executions). */
  blockRows?: number;
  columns: readonly ExportColumn[];
}

function cols(...names: string[]): ExportColumn[] {
  return names.map((name) => ({ name, expr: `\`${name}\`` }));
}

/** `uniqState` columns of the trends rollup, exported as their values. */
function uniqValue(name: string): ExportColumn {
  return { name, expr: `finalizeAggregation(\`${name}\`)`, type: 'UInt64' };
}

// `project_id` is left out of the rows: the manifest names the project once. Internal columns
// (ReplacingMergeTree versions, the scorer's applied lease, OTLP assembly flags) are left out too.
export const DATASETS: readonly Dataset[] = [
  // badge_token is a bearer secret of the public badges.
  { name: 'project', table: 'projects', final: true, projectColumn: 'id', where: 'deleted = 0', columns: cols('id', 'slug', 'name', 'created_at') },
  // Never token_hash; not even the display prefix, which is the token's first characters.
  { name: 'tokens', table: 'tokens', final: true, projectColumn: 'project_id', columns: cols('id', 'scopes', 'created_at', 'revoked_at') },
  {
    name: 'receipts',
    table: 'receipts',
    final: true,
    projectColumn: 'project_id',
    columns: cols('receipt_id', 'idempotency_key', 'source', 'run_id', 'accepted_executions', 'received_at', 'processed_at'),
  },
  {
    name: 'runs',
    table: 'runs',
    final: true,
    projectColumn: 'project_id',
    columns: cols(
      'id', 'started_at', 'receipt_id', 'idempotency_key', 'source', 'ci_provider', 'ci_run_id', 'ci_job_url', 'repository',
      'commit_sha', 'branch', 'base_branch', 'merge_base', 'pr_number', 'trigger', 'shard_index', 'shard_total', 'status',
      'finished_at', 'duration_ms', 'total', 'passed', 'failed', 'skipped', 'flaky', 'trace_id', 'ingested_at',
    ),
  },
  {
    name: 'executions',
    table: 'executions',
    final: false,
    projectColumn: 'project_id',
    columns: cols(
      'id', 'run_id', 'test_id', 'started_at', 'day', 'status', 'attempt', 'retry_of', 'duration_ms', 'file_path', 'suite', 'title',
      'params', 'fingerprint', 'commit_sha', 'branch', 'pr_number', 'ci_provider', 'trigger', 'error_type', 'error_message',
      'error_stack', 'signature_id', 'cluster_id', 'artifacts', 'attributes', 'spans', 'trace_id', 'span_id', 'ingested_at',
    ),
  },
  {
    name: 'test_identities',
    table: 'test_identities',
    final: true,
    projectColumn: 'project_id',
    columns: cols('id', 'fingerprint', 'file_path', 'suite', 'title', 'params', 'params_hash', 'first_seen_at', 'stitched'),
  },
  { name: 'identity_aliases', table: 'identity_aliases', final: true, projectColumn: 'project_id', columns: cols('fingerprint', 'test_id', 'created_at') },
  { name: 'test_merges', table: 'test_merges', final: true, projectColumn: 'project_id', columns: cols('from_test_id', 'into_test_id', 'reason', 'merged_at') },
  {
    name: 'identity_stitches',
    table: 'identity_stitches',
    final: true,
    projectColumn: 'project_id',
    columns: cols('test_id', 'level', 'from_file_path', 'from_title', 'to_file_path', 'to_title', 'confidence', 'created_at'),
  },
  {
    name: 'test_state',
    table: 'test_state',
    final: true,
    projectColumn: 'project_id',
    blockRows: 256, // ~2 KB a row, most of it the model
    columns: cols(
      'test_id', 'file_path', 'suite', 'title', 'score', 'candidate', 'broken', 'samples', 'flip_rate', 'pass_on_rerun_rate', 'trend',
      'last_flaked_at', 'reasons', 'model', 'auto_quarantined', 'quarantine_reason', 'quarantined_at', 'clean_runs', 'released_at',
      'last_run_id', 'last_status', 'last_seen_at', 'scored_at', 'state', 'state_commit', 'state_branch', 'state_at', 'flake_rate',
    ),
  },
  {
    name: 'quarantine_overrides',
    table: 'quarantine_overrides',
    final: true,
    projectColumn: 'project_id',
    columns: cols('test_id', 'override', 'reason', 'state_after', 'decided_at'),
  },
  { name: 'test_health_events', table: 'test_health_events', final: true, projectColumn: 'project_id', columns: cols('test_id', 'kind', 'at', 'score') },
  {
    name: 'error_signatures',
    table: 'error_signatures',
    final: true,
    projectColumn: 'project_id',
    columns: cols('signature_id', 'cluster_id', 'error_type', 'normalized_message', 'frames', 'sketch', 'similarity', 'first_seen_at', 'example_execution'),
  },
  {
    name: 'rca_analyses',
    table: 'rca_analyses',
    final: true,
    projectColumn: 'project_id',
    columns: cols(
      'id', 'cluster_id', 'signature_id', 'execution_id', 'test_id', 'status', 'summary', 'likely_cause', 'suggested_action', 'confidence',
      'similar_past', 'provider', 'llm_model', 'input_tokens', 'output_tokens', 'calls', 'error', 'queued_at', 'completed_at',
    ),
  },
  {
    name: 'ai_token_usage',
    table: 'ai_token_usage',
    final: true,
    projectColumn: 'project_id',
    columns: cols('day', 'call_id', 'at', 'cluster_id', 'provider', 'llm_model', 'input_tokens', 'output_tokens'),
  },
  { name: 'ai_budget_notices', table: 'ai_budget_notices', final: true, projectColumn: 'project_id', columns: cols('day', 'budget', 'spent', 'at') },
  { name: 'codeowners', table: 'codeowners', final: true, projectColumn: 'project_id', columns: cols('content', 'updated_at') },
  { name: 'project_settings', table: 'project_settings', final: true, projectColumn: 'project_id', columns: cols('settings', 'updated_at') },
  {
    name: 'notification_channels',
    table: 'notification_channels',
    final: true,
    projectColumn: 'project_id',
    where: 'deleted = 0',
    // Never signing_secret. A Slack or Discord webhook URL is itself a credential (the token is its
    // path), so webhook targets keep only their scheme and host; email addresses stay whole.
    columns: [
      ...cols('id', 'source', 'kind'),
      { name: 'target', expr: "if(kind = 'email', target, concat(protocol(target), '://', domain(target)))", type: 'String' },
      ...cols('events', 'created_at', 'updated_at'),
    ],
  },
  {
    name: 'daily_test_stats',
    table: 'daily_test_stats',
    final: true,
    projectColumn: 'project_id',
    columns: cols('day', 'test_id', 'executions', 'passed', 'failed', 'flaky', 'skipped', 'retries', 'duration_ms_sum', 'rerun_ms_sum'),
  },
  { name: 'suite_daily', table: 'suite_daily', final: true, projectColumn: 'project_id', columns: cols('day', 'suite', 'executions', 'failed', 'flaky', 'duration_ms_sum') },
  {
    name: 'flaky_trends',
    table: 'flaky_trends',
    final: true,
    projectColumn: 'project_id',
    columns: [...cols('day', 'executions', 'failed', 'flaky_executions'), uniqValue('flaky_tests'), uniqValue('failing_tests')],
  },
];

/** Project-scoped tables deliberately not exported, and why. */
export const NOT_EXPORTED: Readonly<Record<string, string>> = {
  test_recent: 'a 120-day copy of executions (materialized view)',
  signature_bands: 'the LSH index of error_signatures, rebuilt from their sketches',
  file_run_durations: 'per-file durations of each run, summed from executions (materialized view; split planning)',
  split_plans: "shard plans of CI builds, kept 30 days: a build's state, not the project's history",
};
