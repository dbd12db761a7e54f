/**
 * A wrapper the API puts around each call to Temporal so a request's calls share its deadline
 * (the request timeout); `untimed` where there is none (workers, scripts, tests).
 */
export type Timed = <T>(fn: () => Promise<T>) => Promise<T>;

export const untimed: Timed = (fn) => fn();
