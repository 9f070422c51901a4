// The slice of GitHub's REST issues API the tracker uses. The base URL is configurable
// (SERVICE_TRACKER_URL: GitHub Enterprise, or a local peer in tests).
import { z } from 'zod';

const TIMEOUT_MS = 8_000;

const issueSchema = z.object({ number: z.number().int(), html_url: z.string().nullish(), body: z.string().nullish(), state: z.string().optional() });
export type GitHubIssue = z.output<typeof issueSchema>;

export class GitHubError extends Error {
  override readonly name = 'GitHubError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export class GitHubIssues {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly signal: AbortSignal,
  ) {}

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'flakehouse-tracker',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.any([this.signal, AbortSignal.timeout(TIMEOUT_MS)]),
    });
    const text = await res.text();
    if (!res.ok) throw new GitHubError(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`, res.status);
    return text ? (JSON.parse(text) as unknown) : null;
  }

  async create(repo: string, issue: { title: string; body: string; labels: string[] }): Promise<GitHubIssue> {
    return issueSchema.parse(await this.call('POST', `/repos/${repo}/issues`, issue));
  }

  async update(repo: string, number: number, patch: { title?: string; body?: string; state?: 'open' | 'closed'; state_reason?: 'completed' | 'reopened' }): Promise<void> {
    await this.call('PATCH', `/repos/${repo}/issues/${number}`, patch);
  }

  async comment(repo: string, number: number, body: string): Promise<void> {
    await this.call('POST', `/repos/${repo}/issues/${number}/comments`, { body });
  }

  /** The newest issue with our label whose body carries `marker`, if any (first 100 only). */
  async findByMarker(repo: string, label: string, marker: string): Promise<GitHubIssue | null> {
    const list = z.array(issueSchema).parse(await this.call('GET', `/repos/${repo}/issues?labels=${encodeURIComponent(label)}&state=all&per_page=100&sort=created&direction=desc`));
    return list.find((i) => i.body?.includes(marker)) ?? null;
  }
}
