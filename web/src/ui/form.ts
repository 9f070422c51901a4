/** A text field of a submitted form, trimmed ('' when absent or a file). */
export function field(f: FormData, name: string): string {
  const v = f.get(name);
  return typeof v === 'string' ? v.trim() : '';
}
