/**
 * Per-stage timing of the invoke path without touching Core: each port object Core (or the gateway)
 * is given is wrapped so every call of one of its methods is observed as `port.method` with its
 * duration, settled promises included. The count per call answers "how many round trips does one
 * invoke make", the sum "which stage owns the time" (test/bench/invoke.ts reads both from /metrics).
 */

/** Receives one finished call of `port`.`method` that took `durationMs` (rejected calls included). */
export type PortCallObserver = (port: string, method: string, durationMs: number) => void;

/**
 * `target` with each function-valued property replaced by a timed one bound to `target`; other
 * properties are read through. Wrappers are made once per method, not per call.
 */
export function timedPort<T extends object>(target: T, port: string, observe: PortCallObserver): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, key, receiver) {
      const value = Reflect.get(object, key, receiver);
      if (typeof value !== "function" || typeof key !== "string") return value;
      let timed = wrapped.get(key);
      if (!timed) {
        timed = timedFunction(value.bind(object) as (...args: unknown[]) => unknown, port, key, observe);
        wrapped.set(key, timed);
      }
      return timed;
    },
  });
}

/** `fn` observed as `port`.`method`: a promise when it settles, anything else when it returns. */
export function timedFunction<F extends (...args: never[]) => unknown>(
  fn: F,
  port: string,
  method: string,
  observe: PortCallObserver,
): F {
  return ((...args: Parameters<F>) => {
    const started = performance.now();
    const done = () => observe(port, method, performance.now() - started);
    let result: unknown;
    try {
      result = fn(...args);
    } catch (error) {
      done();
      throw error;
    }
    if (result instanceof Promise) return result.finally(done);
    done();
    return result;
  }) as F;
}
