// What the server said when it refused a CLI request: our error body when it is one, else the text.

export interface Refusal {
  status: number;
  /** The error code of our error body (`insufficient_scope`, …), or the HTTP status text. */
  code: string;
  /** The error body's message; the raw text when the body is not ours (may be empty). */
  message: string;
  /** True when the body was our JSON error body. */
  ours: boolean;
}

export async function readRefusal(res: Response): Promise<Refusal> {
  const text = await res.text().catch(() => '');
  let body: { error?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    /* not our JSON error body */
  }
  const ours = typeof body.error === 'string';
  return {
    status: res.status,
    code: typeof body.error === 'string' ? body.error : res.statusText,
    message: typeof body.message === 'string' ? body.message : ours ? '' : text.trim(),
    ours,
  };
}
