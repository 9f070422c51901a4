import { z } from 'zod';
import type { AnyFactory, ComponentKind, ReceiverFactory, Signal, Slot } from './component.js';
import type { ExtensionFactory } from './extension.js';

/**
 * A receiver type as a registry that does not build receivers knows it (the pipeline thread's,
 * src/builtin/processing.ts): its name, the signals it feeds and whether it uses the store. Plain
 * data, handed to that thread by the one that builds the receivers (Registry.receiverTypes).
 */
export interface ReceiverType {
  type: string;
  signals: readonly Signal[];
  needsStore?: boolean;
}

/** The component types a build knows, by kind and type name. */
export class Registry {
  private readonly factories = new Map<string, AnyFactory>();
  private readonly extensions = new Map<string, ExtensionFactory>();

  /** An extension type (./extension.ts): what `extensions:` in a pipeline file can name. */
  registerExtension(factory: ExtensionFactory): this {
    if (this.extensions.has(factory.type)) throw new Error(`duplicate extension type ${factory.type}`);
    this.extensions.set(factory.type, factory);
    return this;
  }

  extension(type: string): ExtensionFactory | undefined {
    return this.extensions.get(type);
  }

  extensionTypes(): string[] {
    return [...this.extensions.keys()].sort();
  }

  register(factory: AnyFactory): this {
    const key = `${factory.kind}:${factory.type}`;
    if (this.factories.has(key)) throw new Error(`duplicate ${factory.kind} type ${factory.type}`);
    this.factories.set(key, factory);
    return this;
  }

  /**
   * A receiver type known by name only: the graph checks a pipeline file that lists it, and
   * creating one throws. Its config is not known here (the thread that builds the receiver validated
   * it and compares it on reload, with its defaults): every config reads as `{}`, so a reload
   * check here (./reload.ts) never tells apart two configs that thread found equal.
   */
  registerReceiverType(t: ReceiverType): this {
    const factory: ReceiverFactory = {
      kind: 'receiver',
      type: t.type,
      signals: [...t.signals],
      description: `receiver ${t.type}, built on the thread that serves ingest`,
      configSchema: z.unknown().transform(() => ({})),
      ...(t.needsStore !== undefined ? { needsStore: t.needsStore } : {}),
      create() {
        throw new Error(`receiver ${t.type} is not built here: receivers run on the thread that serves ingest`);
      },
    };
    return this.register(factory);
  }

  /** The receiver types, as plain data for a registry that does not build them (registerReceiverType). */
  receiverTypes(): ReceiverType[] {
    return [...this.factories.values()]
      .filter((f) => f.kind === 'receiver')
      .map((f) => ({ type: f.type, signals: [...f.signals], ...(f.needsStore !== undefined ? { needsStore: f.needsStore } : {}) }));
  }

  get(kind: ComponentKind, type: string): AnyFactory | undefined {
    return this.factories.get(`${kind}:${type}`);
  }

  types(kind: ComponentKind): string[] {
    return [...this.factories.values()].filter((f) => f.kind === kind).map((f) => f.type).sort();
  }

  /** Processor types that fill in `slot`: what a pipeline missing it should add. */
  providersOf(slot: Slot): string[] {
    return [...this.factories.values()]
      .filter((f) => f.kind === 'processor' && (f.provides ?? []).includes(slot))
      .map((f) => f.type)
      .sort();
  }
}
