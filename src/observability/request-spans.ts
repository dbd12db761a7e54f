/**
 * One server span per API request, named by its route pattern (`POST /v1/orders`), continuing the
 * caller's trace when it sends a `traceparent`. Everything the request does — the Temporal calls
 * (their client interceptor), the provider calls (undici) — becomes its child.
 *
 * A middleware rather than @opentelemetry/instrumentation-http: that one patches node:http through
 * require hooks and so must load before anything else does, which the API built in-process by
 * the tests (and tsx) cannot promise; a request span is all the API needs.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { RequestHandler } from 'express';
import { matchedRoute } from './matched-route';

export function requestSpans(tracer: Tracer): RequestHandler {
  return (req, res, next) => {
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': req.path },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    // Body parsing resumes in the socket's callbacks: bind the request and response so those
    // callbacks (and the handlers they call) run inside the span too.
    context.bind(active, req);
    context.bind(active, res);
    res.once('close', () => {
      const route = matchedRoute(req);
      if (route !== undefined) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(active, next);
  };
}
