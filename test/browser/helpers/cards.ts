// A `table.row-cards` table as the page lays it out (web/src/styles.css): at 390 px each row a card
// within the viewport, its header hidden and each cell but the first led by its data-label; at
// 1280 px an ordinary table with its header.
import type { Locator } from 'playwright-core';

interface Box {
  left: number;
  right: number;
  width: number;
  height: number;
}
interface El {
  getBoundingClientRect(): Box;
  getAttribute(name: string): string | null;
  querySelector(s: string): El | null;
  querySelectorAll(s: string): ArrayLike<El>;
  textContent: string | null;
}
interface Win {
  innerWidth: number;
  getComputedStyle(e: El, pseudo?: string): { display: string; content: string };
}

export interface TableLayout {
  rows: number;
  /** `display` of the rows: `block` as cards, `table-row` as a table. */
  rowDisplay: string[];
  /** Whether the column headers take room on the page. */
  headerShown: boolean;
  /** Rows reaching past the viewport's edges (the start of their text). */
  outside: string[];
  /** Cells after the first without a data-label, or whose label the page does not show before them. */
  unlabelled: string[];
}

export async function tableLayout(table: Locator): Promise<TableLayout> {
  return table.evaluate((t) => {
    const el = t as unknown as El;
    const win = globalThis as unknown as Win;
    const rows = Array.from(el.querySelectorAll(':scope > tbody > tr'));
    const head = el.querySelector(':scope > thead')?.getBoundingClientRect();
    const text = (e: El): string => (e.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 60);
    return {
      rows: rows.length,
      rowDisplay: [...new Set(rows.map((r) => win.getComputedStyle(r).display))],
      headerShown: !!head && head.height > 1 && head.width > 1,
      outside: rows.filter((r) => {
        const b = r.getBoundingClientRect();
        return b.left < -0.5 || b.right > win.innerWidth + 0.5;
      }).map(text),
      unlabelled: rows.flatMap((r) =>
        Array.from(r.querySelectorAll(':scope > td'))
          .slice(1)
          .filter((c) => {
            const label = c.getAttribute('data-label');
            const shown = win.getComputedStyle(c, '::before').content;
            return !label || (win.getComputedStyle(r).display === 'block' && shown !== JSON.stringify(label));
          })
          .map((c) => `${text(r)} / ${c.getAttribute('data-label') ?? '(no label)'}`),
      ),
    };
  });
}
