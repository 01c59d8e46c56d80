import http from 'node:http';
import Router, { type RouterOptions } from '@koa/router';
import type { DefaultContext, DefaultState } from 'koa';

/**
 * The one way the service builds a router: it knows every method Node parses, so a method that no route of
 * a path has answers 405 with `Allow` (RFC 9110) instead of @koa/router's 501 for methods outside its short
 * default list (TRACE, PROPFIND, …).
 */
export function createRouter<StateT = DefaultState, ContextT = DefaultContext>(
  options: Omit<RouterOptions, 'methods'> = {},
): Router<StateT, ContextT> {
  return new Router<StateT, ContextT>({ ...options, methods: [...http.METHODS] });
}
