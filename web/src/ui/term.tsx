// A word with its definition: shown under the pointer on hover and under the focus ring when the
// keyboard reaches it (it is focusable), read by screen readers as the word's description
// (aria-describedby, while it is shown: focus shows it; aria-hidden itself, so it never becomes part
// of a header's name). The definition is in the page only while shown, so a cell's text stays its own. It is placed with `position: fixed` from script (the CSP
// allows CSSOM styles), so a table's scroll box never clips it. Escape hides it.
import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';

/** The definition's width in px (styles.css .term-tip max-width 18rem at 16 px) and the margin it keeps from the viewport's edges. */
const TIP_WIDTH = 288;
const EDGE = 8;

export function Term({ children, def, class: cls }: { children: ComponentChildren; def: string; class?: string }) {
  const id = useId();
  const [at, setAt] = useState<{ left: number; top: number } | null>(null);
  const show = (e: { currentTarget: EventTarget | null }) => {
    const el = e.currentTarget as HTMLElement | null;
    if (!el) return;
    const r = el.getBoundingClientRect();
    const width = Math.min(TIP_WIDTH, innerWidth - 2 * EDGE);
    setAt({ left: Math.max(EDGE, Math.min(r.left, innerWidth - width - EDGE)), top: r.bottom + 4 });
  };
  const hide = () => setAt(null);
  return (
    <span
      class={cls ? `term ${cls}` : 'term'}
      tabIndex={0}
      aria-describedby={at ? id : undefined}
      onMouseEnter={show}
      onMouseLeave={hide}
      onFocus={show}
      onBlur={hide}
      onKeyDown={(e) => {
        if (e.key === 'Escape') hide();
      }}
    >
      {children}
      {at ? (
        <span id={id} class="term-tip" aria-hidden="true" style={{ left: `${at.left}px`, top: `${at.top}px` }}>
          {def}
        </span>
      ) : null}
    </span>
  );
}
