// A commit's page on its repository's host, when the host is known to be GitHub: the repository is
// stored as `owner/name` (ci-detect.ts), so the host comes from the CI provider or the job's URL.
const OWNER_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const SHA = /^[0-9a-f]{7,40}$/i;

export function githubCommitUrl(source: { repository: string; ciProvider: string; ciJobUrl: string } | null, commitSha: string): string | null {
  if (!source || !OWNER_NAME.test(source.repository) || !SHA.test(commitSha)) return null;
  const onGithub = source.ciProvider === 'github_actions' || source.ciJobUrl.startsWith('https://github.com/');
  return onGithub ? `https://github.com/${source.repository}/commit/${commitSha}` : null;
}
