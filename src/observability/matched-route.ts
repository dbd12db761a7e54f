/**
 * The route pattern that matched (`/v1/orders/:ref`), so log lines, metrics and spans group by
 * route, not by ref. Routes are registered with full paths: a mounted router's prefix is gone by
 * the time a response closes.
 */
import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';

export function matchedRoute(req: IncomingMessage): string | undefined {
  const { route } = req as Partial<Request>;
  return typeof route?.path === 'string' ? route.path : undefined;
}
