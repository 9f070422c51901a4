import type { AnyFactory, ComponentKind, Slot } from './component.js';
import type { ExtensionFactory } from './extension.js';

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
