// A status word with its colour; the word is always there, so colour is never the only signal.
export function Status({ status }: { status: string }) {
  const s = status.toLowerCase();
  const known = /^(pass|passed|success|fail|failed|failure|error|timedout|flaky|skip|skipped|cancelled|canceled|running)$/.test(s);
  return <span class={`status status-${known ? s : 'other'}`}>{status}</span>;
}
