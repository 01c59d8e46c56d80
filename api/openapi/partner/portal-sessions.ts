import { portalLinkRequest } from '../../../application/access/portal-sessions';
import { zodJsonSchema } from '../zod-json-schema';
import { error, json, partnerOperation, ref } from './common';
import { partnerBodyErrors } from './endpoint';

// The portal's access (api/partner/portal-sessions-routes.ts, api/portal/router.ts; docs/partners.md "The portal").

const dateTime = { type: 'string', format: 'date-time' };

export const portalSessionSchemas = {
  PortalLinkRequest: zodJsonSchema(portalLinkRequest),
  PortalLink: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'expires_at', 'scopes'],
    properties: {
      url: {
        type: 'string',
        description: 'Open it once, before expires_at; the token is in its fragment, which no server log sees.',
      },
      expires_at: dateTime,
      scopes: { type: 'array', items: { type: 'string' }, description: "The session's scopes." },
    },
  },
  PortalSessionOpenRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['token'],
    properties: { token: { type: 'string', maxLength: 200, description: "The link's fragment after `token=`." } },
  },
  PortalSessionOpened: {
    type: 'object',
    additionalProperties: false,
    required: ['expires_at'],
    properties: { expires_at: { ...dateTime, description: 'An hour after the link was opened.' } },
  },
};

export const portalSessionPaths = {
  '/partner/v1/portal-sessions': {
    post: partnerOperation(
      null,
      'createPortalLink',
      'A one-time link to the partner portal',
      {
        '201': { description: 'The link, shown once.', content: json(ref('PortalLink')) },
        '400': error('Invalid JSON or field, or a scope the app does not hold.'),
        '403': error(
          'The app check failed, or the request came from a portal session (`reason` key_required): only the ' +
            "app's key makes links.",
        ),
        ...partnerBodyErrors,
      },
      {
        description:
          'The link opens a session of at most an hour in the portal (`/portal`), with the scopes asked for ' +
          "(by default all of the app's). It can be opened once, within `ttl_seconds` (10 minutes by default).",
        requestBody: { required: true, content: json(ref('PortalLinkRequest')) },
      },
    ),
  },
  '/partner/v1/portal-sessions/open': {
    post: {
      operationId: 'openPortalSession',
      summary: "Exchange a portal link's token for a session cookie (the portal page does this)",
      tags: ['partner'],
      security: [],
      // No app check: the link's token is the credential.
      'x-app-scope': null,
      description:
        'Sets `portal_session` (HttpOnly, SameSite=Strict, Secure under https) and `portal_csrf` (SameSite=Strict, ' +
        'readable by the page) for an hour. A link opens one session only; a second try is refused, so is an ' +
        "expired link's.",
      requestBody: { required: true, content: json(ref('PortalSessionOpenRequest')) },
      responses: {
        '201': {
          description: 'The session is open.',
          headers: { 'Set-Cookie': { schema: { type: 'string' }, description: 'portal_session and portal_csrf.' } },
          content: json(ref('PortalSessionOpened')),
        },
        '400': error('Invalid JSON or field.'),
        '403': error('`reason` link_used, link_expired or link_unknown (not a link of ours, or its app is revoked).'),
        ...partnerBodyErrors,
      },
    },
  },
  '/partner/v1/portal-sessions/current': {
    delete: partnerOperation(
      null,
      'closePortalSession',
      'Sign the portal session out',
      {
        '204': { description: 'Ended; its cookies are cleared.' },
        '400': error('The request carries the app key, not a portal session (`reason` no_session).'),
      },
      { security: [{ PortalSession: [] }] },
    ),
  },
};
