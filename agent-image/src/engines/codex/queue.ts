/**
 * What a run receives from Codex, in arrival order: pushed by the host's callbacks, taken one at a
 * time by the run, which may be waiting on something else meanwhile (an approval) without losing any.
 */
export class Inbox<T> {
  private readonly items: T[] = [];
  private waiter: ((item: T) => void) | undefined;

  push(item: T): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  /** The next item; rejects with the signal's reason when it aborts first. */
  next(signal: AbortSignal): Promise<T> {
    signal.throwIfAborted();
    const first = this.items.shift();
    if (first !== undefined) return Promise.resolve(first);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.waiter = undefined;
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiter = (item) => {
        signal.removeEventListener("abort", onAbort);
        resolve(item);
      };
    });
  }
}
