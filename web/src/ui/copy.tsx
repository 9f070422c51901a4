// A copy-to-clipboard button that says whether it worked.
import { useState } from 'preact/hooks';

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState<'' | 'copied' | 'failed'>('');
  return (
    <>
      <button
        type="button"
        class="small secondary"
        onClick={() => {
          navigator.clipboard.writeText(text).then(
            () => setDone('copied'),
            () => setDone('failed'),
          );
        }}
      >
        {label}
      </button>
      <span role="status" class="muted">
        {done === 'copied' ? 'Copied.' : done === 'failed' ? 'Copy failed: select the text and copy it by hand.' : ''}
      </span>
    </>
  );
}
