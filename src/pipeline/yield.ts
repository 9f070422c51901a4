// The worker shares the event loop with the ingest API; long synchronous stretches would delay
// every 202 behind them. Hot loops call `tick()` and give the loop a turn every `every` units.
import { setImmediate as turn } from 'node:timers/promises';

export class Yielder {
  private count = 0;

  constructor(private readonly every = 1000) {}

  async tick(units = 1): Promise<void> {
    this.count += units;
    if (this.count >= this.every) {
      this.count = 0;
      await turn();
    }
  }
}
