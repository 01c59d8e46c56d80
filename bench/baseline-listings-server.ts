import http from 'node:http';
import pg from 'pg';
import '../db/database'; // the same pg type parsers as the service (bigint ids as numbers)
import { appAccessQuery } from '../api/listings/access-query';
import { pageQuery, type UserRow } from '../api/listings/page-query';
import { positionalSql, type SqlFragment } from '../db/sql';
import { serializeUser } from '../api/listings/user-serializer';
import { verifyAppKey } from '../lib/app-keys';
import { listenOnLoopback, serveInChild } from './server-child';

/**
 * The floor to compare the API against: bare node:http and a pg pool of the API's size, running the least SQL
 * that gives the API's bytes, which is the very statements the API builds: the access check, then the kept
 * count (migration 009's counter, not count(*)) with the page. No framework, paging links or errors.
 * GET /companies/:id/users/[?after=ID] only.
 */
const PAGE_SIZE = 50;
const ROUTE = /^\/companies\/([^/]+)\/users\/?$/;

const positional = (query: SqlFragment) => ({ text: positionalSql(query.sql), values: [...query.bindings] });

void serveInChild(async () => {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://baseline');
      const match = ROUTE.exec(url.pathname);
      const appId = req.headers['x-app-id'];
      const appKey = req.headers['x-app-key'];
      if (!match || typeof appId !== 'string' || typeof appKey !== 'string') return send(res, 404, { detail: 'Not found.' });
      const target = { kind: 'company', companyId: decodeURIComponent(match[1]) } as const;
      const { rows: [access] } = await pool.query(positional(appAccessQuery(appId, target)));
      if (!access || !verifyAppKey(appKey, { salt: access.key_salt, hash: access.key_hash }) || access.granted_company_id === null) {
        return send(res, 403, { detail: 'You do not have permission to perform this action.' });
      }
      const after = url.searchParams.get('after');
      const window = { order: 'asc', boundary: after ? Number(after) : null, offset: 0, limit: PAGE_SIZE + 1 } as const;
      const { rows } = await pool.query<UserRow & { total: number }>(positional(pageQuery(target, window)));
      const users = rows.filter((row) => row.id !== null).slice(0, PAGE_SIZE);
      send(res, 200, { count: rows[0]?.total ?? 0, next: null, previous: null, results: users.map(serializeUser) });
    } catch (error) {
      send(res, 500, { detail: error instanceof Error ? error.message : 'error' });
    }
  });
  return listenOnLoopback(server);
});

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
