// The span shapes of real emitters, read without configuration (docs/contract.md §4, issue 29).
// Each block names the document (and version) its keys follow, so a later rename upstream can be
// added beside the old key instead of replacing it: emitters in the field lag the spec.
import type { AttrValue, OtlpSpan } from './decode.js';

// ---------------------------------------------------------------------------------------------
// pytest-opentelemetry (github.com/chrisguidry/pytest-opentelemetry, plugin.py and resource.py
// as of 1.x): one root span named `test session` (`test run` in later releases); one span per test named by its node id
// (`tests/test_cart.py::TestCart::test_adds[param]`) with `code.function` (= item.name, params
// included), `code.filepath`, `code.lineno` (and `code.namespace` in newer releases);
// `<nodeid>::setup|call|teardown` children; a failure recorded as an `exception` event and span
// status ERROR; resource `service.name` = the project directory, `service.version` = `git rev-parse HEAD`.

/**
 * The root span pytest-opentelemetry opens for the whole session, the run span of its traces:
 * `test session` in the 1.0 releases, `test run` since (its instrumentation.py; under xdist each
 * worker's `test worker gwN` is a child of it, not a run of its own).
 */
export const PYTEST_SESSION_SPANS: ReadonlySet<string> = new Set(['test session', 'test run']);

export function isPytestSessionSpan(span: Pick<OtlpSpan, 'name'>): boolean {
  return PYTEST_SESSION_SPANS.has(span.name);
}

/**
 * The node id when `span` is a pytest-opentelemetry test span. Recognised by shape, per span
 * (the session span may be in another export request): the name is `<file>::…::<code.function>`,
 * whose file part has an extension. That excludes the `::setup`/`::call`/`::teardown` children
 * (no `code.function`) and e.g. Rust `crate::module::fn` spans (no file extension).
 * `pytest.nodeid`, which some releases also set, is taken when the span is named by it.
 */
export function pytestNodeId(span: OtlpSpan): string | undefined {
  const a = span.attributes;
  const nodeId = a['pytest.nodeid'];
  // Only the span named by it: setup/call/teardown and fixture spans may carry the same node id.
  if (typeof nodeId === 'string' && nodeId.includes('::') && span.name === nodeId) return nodeId;
  const fn = a['code.function'];
  if (typeof fn !== 'string' || fn === '') return undefined;
  const name = span.name;
  if (!name.endsWith(`::${fn}`)) return undefined;
  const file = name.slice(0, name.indexOf('::'));
  return /\.[A-Za-z0-9]+$/.test(file) ? name : undefined;
}

export interface NodeIdParts {
  filePath: string;
  /** Class (and nested class) parts joined by `::`, as in the node id; '' for module-level tests. */
  suite: string;
  title: string;
  /** The `[…]` parametrization id, as `{id}`: pytest sends no parameter names, only the id. */
  params?: { id: string };
}

/** `tests/test_cart.py::TestCart::test_adds[a::b]` → file, suite `TestCart`, title `test_adds`, params `{id: 'a::b'}`. */
export function parseNodeId(nodeId: string): NodeIdParts {
  const sep = nodeId.indexOf('::');
  const filePath = sep < 0 ? nodeId : nodeId.slice(0, sep);
  let rest = sep < 0 ? '' : nodeId.slice(sep + 2);
  // Names never contain `[`, so the first one opens the parametrization id (which may hold `::`).
  let params: NodeIdParts['params'];
  const open = rest.indexOf('[');
  if (open >= 0 && rest.endsWith(']')) {
    params = { id: rest.slice(open + 1, -1) };
    rest = rest.slice(0, open);
  }
  const names = rest.split('::').filter((p) => p !== '');
  const title = names.pop() ?? filePath;
  const parts: NodeIdParts = { filePath, suite: names.join('::'), title };
  if (params) parts.params = params;
  return parts;
}

/**
 * pytest-opentelemetry's `service.version` is `git rev-parse HEAD`. Only a full 40-hex sha is taken
 * as the commit: ordinary services put release versions there, and a short all-digit version
 * (`20240101`) would pass for an abbreviated sha.
 */
export function commitFromServiceVersion(v: AttrValue | undefined): string | undefined {
  return typeof v === 'string' && /^[0-9a-fA-F]{40}$/.test(v.trim()) ? v.trim().toLowerCase() : undefined;
}

// ---------------------------------------------------------------------------------------------
// OpenTelemetry semantic conventions v1.30.0, attribute registry (docs/attributes-registry/
// test.md, cicd.md, vcs.md). Older names (v1.26–v1.28: `vcs.repository.ref.*`,
// `vcs.repository.change.id`) follow the current ones, since emitters pin older semconv packages.

/** test.md: `test.suite.name` on the suite span; cases under it inherit it as their suite. */
export const SUITE_NAME = 'test.suite.name';

/** Run status, in order: ours, then the test suite's, the pipeline's, the pipeline task's (job's). */
export const RUN_STATUS_KEYS = ['test.run.status', 'test.suite.run.status', 'cicd.pipeline.result', 'cicd.pipeline.task.run.result'] as const;

/** vcs.md: the head ref's revision; then our legacy key; then the v1.26–1.28 name. */
export const HEAD_REVISION_KEYS = ['vcs.ref.head.revision', 'vcs.commit_sha', 'vcs.repository.ref.revision'] as const;
export const HEAD_NAME_KEYS = ['vcs.ref.head.name', 'vcs.branch', 'vcs.repository.ref.name'] as const;
export const CHANGE_ID_KEYS = ['vcs.change.id', 'vcs.pr_number', 'vcs.repository.change.id'] as const;

/**
 * cicd.md: the pipeline run's URL, else the task run's (a job within it). The pipeline run comes
 * first because our own reporter sends ciJobUrl there and its value must round-trip unchanged.
 */
export const CI_JOB_URL_KEYS = ['cicd.pipeline.run.url.full', 'cicd.pipeline.task.run.url.full'] as const;

/**
 * cicd.md: the pipeline task (a CI job) the run belongs to, e.g. `test (node 20)`. Two jobs of one
 * commit are two jobs, not a job and its re-run. Read from the resource or the run span, else from
 * the task span above the run's first test case (a pipeline span being the run span).
 */
export const CI_JOB_NAME_KEY = 'cicd.pipeline.task.name';

/**
 * The job's matrix values as a JSON object (what `${{ toJSON(matrix) }}` gives): ours, as the
 * conventions have no key for them (our `service.*` keys, as `service.trigger`).
 */
export const CI_JOB_MATRIX_KEY = 'service.job.matrix';

/**
 * The CI provider a pipeline or task run URL belongs to, when its path has the provider's own shape
 * (`…/actions/runs/<id>` on GitHub, `…/-/pipelines/<id>` or `…/-/jobs/<id>` on GitLab, any host:
 * GitHub Enterprise and self-managed GitLab keep these paths). cicd.md has no key naming the
 * provider (`cicd.system.component` names a component such as `controller`), so the URL is what tells.
 */
export function ciProviderFromUrl(v: AttrValue | undefined): 'github_actions' | 'gitlab_ci' | undefined {
  if (typeof v !== 'string' || !URL.canParse(v)) return undefined;
  const path = new URL(v).pathname;
  if (/^\/[^/]+\/[^/]+\/actions\/runs\/\d+/.test(path)) return 'github_actions';
  if (/\/-\/(pipelines|jobs)\/\d+/.test(path)) return 'gitlab_ci';
  return undefined;
}
