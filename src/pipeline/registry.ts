import type { AnyFactory, ComponentKind, Slot } from './component.js';

/** The component types a build knows, by kind and type name. */
export class Registry {
  private readonly factories = new Map<string, AnyFactory>();

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
