// A modal <dialog> asking for a reason (quarantine, release, revoke). Native showModal() traps
// focus and closes on Escape; focus returns to the button that opened it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { asFailure, type ApiFailure } from '../api.js';
import { ErrorView } from './states.js';

export interface ReasonDialogProps {
  title: string;
  description: string;
  confirmLabel: string;
  reasonLabel?: string;
  reasonRequired?: boolean;
  onConfirm: (reason: string) => Promise<void>;
  onClose: () => void;
}

export function ReasonDialog({ title, description, confirmLabel, reasonLabel = 'Reason', reasonRequired = false, onConfirm, onClose }: ReasonDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    ref.current?.showModal();
    return () => opener?.focus?.();
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onConfirm(reason.trim());
      ref.current?.close();
    } catch (err) {
      setError(asFailure(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="dialog-title">
      <article>
        <header>
          <h2 id="dialog-title">{title}</h2>
        </header>
        <form onSubmit={(e) => void submit(e)}>
          <p>{description}</p>
          <label>
            {reasonLabel}
            <input name="reason" value={reason} maxLength={200} required={reasonRequired} onInput={(e) => setReason(e.currentTarget.value)} autoFocus />
          </label>
          {error ? <ErrorView error={error} /> : null}
          <footer class="dialog-actions">
            <button type="button" class="secondary" onClick={() => ref.current?.close()}>
              Cancel
            </button>
            <button type="submit" aria-busy={busy} disabled={busy}>
              {confirmLabel}
            </button>
          </footer>
        </form>
      </article>
    </dialog>
  );
}
