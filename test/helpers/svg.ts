import sax from 'sax';

/** Parses strictly (throws on malformed XML) and returns the root element's name and all text. */
export function parseSvg(text: string): { root: string; text: string } {
  const parser = sax.parser(true);
  let root = '';
  let content = '';
  parser.onopentag = (node) => {
    root ||= node.name;
  };
  parser.ontext = (t) => {
    content += t;
  };
  parser.onerror = (e) => {
    throw e;
  };
  parser.write(text).close();
  return { root, text: content };
}
