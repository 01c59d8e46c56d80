import type { Context } from 'koa';

// The service's own pages (/docs, /portal) and their files: how each is answered, in one place.

export interface StaticFile {
  readonly type: string;
  readonly body: Buffer;
}

/** A page under its Content-Security-Policy; `headers` add to (or replace) the defaults. */
export function answerPage(ctx: Context, policy: string, html: string, headers: Record<string, string> = {}): void {
  ctx.set({ 'Content-Security-Policy': policy, 'X-Content-Type-Options': 'nosniff', ...headers });
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

/** One of `files` by the path's `:file`, else nothing (the app's 404). */
export function answerFile(
  ctx: Context & { params: Record<string, string> },
  files: ReadonlyMap<string, StaticFile>,
  cacheControl: string,
): void {
  const file = files.get(ctx.params.file);
  if (!file) return;
  ctx.set({ 'Cache-Control': cacheControl, 'X-Content-Type-Options': 'nosniff' });
  ctx.type = file.type;
  ctx.body = file.body;
}
