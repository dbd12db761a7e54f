/**
 * The API's Prometheus endpoint, on a listener of its own (API_METRICS_ADDRESS) rather than on the
 * public API port: back offices reach the API, only the scraper reaches this. It answers
 * `GET /metrics` and nothing else, without authentication — bind it to an address only the
 * scraper's network reaches (docker-compose publishes no port for it).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { splitHostPort } from '../config';
import type { PrometheusMetrics } from './prometheus';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(metrics: PrometheusMetrics, address: string): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  const { host, port } = splitHostPort(address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${shownHost}:${bound.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
