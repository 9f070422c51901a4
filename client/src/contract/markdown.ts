// Markdown the PR comment and the CLI's summary share: test names and error text come from the
// code under test, so they are made safe before they go into a table.

/** Text safe inside a table cell: one line, no pipes or HTML, bounded. */
export function cell(text: string, max = 160): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  const cut = oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
  return cut.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
