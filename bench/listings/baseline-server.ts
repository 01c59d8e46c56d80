import http from 'node:http';
import pg from 'pg';
import '../../db/database'; // the same pg type parsers as the service (bigint ids as numbers)
import { serializeUser } from '../../api/listings/user-serializer';
import { verifyAppKey } from '../../lib/app-keys';
import { listenOnLoopback, serveInChild } from '../harness/server-child';
import { forPg, type Statement } from '../harness/statements';

/**
 * The floor to compare the API against: bare node:http and a pg pool of the API's size, running the very
 * statements the API ran for the same request (LISTINGS_ROUTES: name → [access check, count and page], taken
 * from the API by statementsOf), checking the key and writing the same user objects. No framework, paging links
 * or error handling. GET /<name> only.
 */
const PAGE_SIZE = 50;

void serveInChild(async () => {
  const routes: Record<string, [Statement, Statement]> = JSON.parse(process.env.LISTINGS_ROUTES ?? '{}');
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    try {
      const route = routes[(req.url ?? '').slice(1)];
      const appKey = req.headers['x-app-key'];
      if (!route || typeof appKey !== 'string') return send(res, 404, { detail: 'Not found.' });
      const {
        rows: [access],
      } = await pool.query(forPg(route[0]));
      if (
        !access ||
        !verifyAppKey(appKey, { salt: access.key_salt, hash: access.key_hash }) ||
        access.granted_company_id === null
      ) {
        return send(res, 403, { detail: 'You do not have permission to perform this action.' });
      }
      const { rows } = await pool.query(forPg(route[1]));
      const users = rows.filter((row) => row.id !== null).slice(0, PAGE_SIZE);
      send(res, 200, { count: rows[0]?.total ?? 0, next: null, previous: null, results: users.map(serializeUser) });
    } catch (error) {
      send(res, 500, { detail: error instanceof Error ? error.message : 'error' });
    }
  };
  // answer catches its own errors: its promise never rejects.
  const server = http.createServer((req, res) => void answer(req, res));
  return listenOnLoopback(server);
});

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
