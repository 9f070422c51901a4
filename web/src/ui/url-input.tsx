// A filter field that shows what the URL says: typed text stays until the form is applied, and a
// navigation (back, "clear the filters", a shared link) puts the URL's value back in the field.
import { useEffect, useState } from 'preact/hooks';

export interface UrlInputProps {
  name: string;
  urlValue: string;
  type?: 'text' | 'number';
  min?: string;
  max?: string;
  step?: string;
  placeholder?: string;
}

export function UrlInput({ urlValue, type = 'text', name, min, max, step, placeholder }: UrlInputProps) {
  const [value, setValue] = useState(urlValue);
  useEffect(() => setValue(urlValue), [urlValue]);
  const onInput = (e: { currentTarget: HTMLInputElement }) => setValue(e.currentTarget.value);
  // Two literal branches: Preact's input typings narrow on a literal `type`.
  if (type === 'number') return <input type="number" name={name} min={min} max={max} step={step} placeholder={placeholder} value={value} onInput={onInput} />;
  return <input type="text" name={name} placeholder={placeholder} value={value} onInput={onInput} />;
}
