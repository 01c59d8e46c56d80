import { erasureRequest } from '../../../application/personal-data/erasure';
import { SUBJECT_KINDS } from '../../../lib/subject-index';
import { zodJsonSchema } from '../zod-json-schema';
import { ref, json, error, dateTime, nullable, uuid, operation, getOne, badBody } from './common';

export const erasureSchemas = {
  ErasureRequest: zodJsonSchema(erasureRequest),
  ErasureAccepted: {
    type: 'object',
    required: ['erasure_id', 'status', 'status_url'],
    additionalProperties: false,
    properties: { erasure_id: uuid, status: { const: 'pending' }, status_url: { type: 'string' } },
  },
  Erasure: {
    type: 'object',
    additionalProperties: false,
    required: [
      'erasure_id',
      'status',
      'subject_kind',
      'company_id',
      'requested_by',
      'requested_at',
      'webhooks_found',
      'deliveries_cancelled',
      'bodies_removed',
      'runs_deleted',
      'runs_gone',
      'pending_reason',
      'index_key_ids',
      'completed_at',
      'updated_at',
      'status_url',
    ],
    properties: {
      erasure_id: uuid,
      status: {
        type: 'string',
        enum: ['pending', 'completed'],
        description:
          '`completed`: every body found is removed, every start of those webhooks is settled, and Temporal ' +
          'serves no run of their workflow ids (not by run id, not by workflow id, not in a list).',
      },
      subject_kind: {
        type: 'string',
        enum: [...SUBJECT_KINDS],
        description: 'The record keeps the kind and an HMAC of the subject, never the subject.',
      },
      company_id: { type: ['string', 'null'] },
      requested_by: {
        type: 'string',
        description: "The actor: the token's name, `INTERNAL_API_TOKEN`, or `cli:<user>@<host>`.",
      },
      requested_at: dateTime,
      webhooks_found: { type: ['integer', 'null'], minimum: 0, description: 'Null until the webhooks are erased.' },
      deliveries_cancelled: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Pending deliveries cancelled (status `cancelled`, status_reason `erasure`).',
      },
      bodies_removed: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Bodies removed by this erasure (those the retention purge had removed are not counted).',
      },
      runs_deleted: {
        type: ['integer', 'null'],
        minimum: 0,
        description:
          'Workflow ids whose runs (every run: resets and late starts too) were deleted; null until the deletes ' +
          'are made. A test send has none.',
      },
      runs_gone: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Of those, the workflow ids Temporal serves no run of any more (deletion is asynchronous).',
      },
      pending_reason: {
        type: ['string', 'null'],
        description:
          'Why a pending erasure is not completed yet: a step failing and retried, runs Temporal still serves, or ' +
          'starts not settled. Null once nothing holds it.',
      },
      index_key_ids: {
        type: 'array',
        items: { type: 'string' },
        description:
          'The ids of the subject index keys it searched under (SUBJECT_INDEX_KEYS; `development` for the ' +
          'development key).',
      },
      completed_at: nullable(dateTime),
      updated_at: dateTime,
      status_url: { type: 'string' },
    },
  },
};

const erasureIdParameter = {
  name: 'erasure_id',
  in: 'path',
  required: true,
  schema: uuid,
  description: 'The erasure id (any other value answers 404).',
};

export const erasurePaths = {
  '/internal/v1/erasures': {
    post: operation(
      ['erase'],
      'requestErasure',
      "Erase a subject's webhooks: bodies, response excerpts and Temporal runs; pending deliveries cancelled",
      {
        '202': {
          description: 'Recorded; the erasure runs in the background. Location is its status URL.',
          content: json(ref('ErasureAccepted')),
        },
        ...badBody,
        '400': error(
          'Invalid JSON, both subjects or neither, an empty candidate_id, a malformed e-mail address: one error ' +
            'per field.',
        ),
        '500': error("Temporal refused the service's configuration."),
      },
      { requestBody: { required: true, content: json(ref('ErasureRequest')) } },
    ),
  },
  '/internal/v1/erasures/{erasure_id}': getOne(
    ['erase'],
    erasureIdParameter,
    'getErasure',
    'An erasure: its status, counts and times',
    'Erasure',
    'erasure',
  ),
};
