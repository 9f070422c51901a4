// The built-in receiver types: what serves ingest, on the thread that answers HTTP. Apart from
// the processors, exporters and connectors (src/builtin/processing.ts) so that the pipeline thread,
// which builds no receiver, never loads one (test/unit/import-boundaries.test.ts).
import { junitReceiverFactory } from '../receivers/junit/index.js';
import { nativeReceiverFactory } from '../receivers/native/index.js';
import { otlpReceiverFactory } from '../receivers/otlp/index.js';
import type { AnyFactory } from '../pipeline/component.js';

export const builtinReceivers: readonly AnyFactory[] = [otlpReceiverFactory, junitReceiverFactory, nativeReceiverFactory] as AnyFactory[];
