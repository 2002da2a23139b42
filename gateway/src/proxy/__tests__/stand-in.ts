import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A stand-in service on a free loopback port: its base URL and a close that also drops kept-alive connections. */
export async function listenStandIn(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
