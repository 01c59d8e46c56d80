import { status as GrpcStatus } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import { grpcCodeOf, isRefusal, refusalReason } from './grpc-refusal';
import { WEBHOOK_SEARCH_ATTRIBUTES } from './search-attributes';
import { TemporalSetupError } from '../lib/errors';

type OperatorService = temporal.api.operatorservice.v1.OperatorService;
const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

/** What an operator types to register the attributes by hand, for servers that refuse the operator API. */
export const REGISTER_BY_HAND =
  `temporal operator search-attribute create ` +
  `${WEBHOOK_SEARCH_ATTRIBUTES.map((key) => `--name ${key.name}`).join(' ')} --type Keyword`;

/**
 * Registers the webhook search attributes that `namespace` lacks (Keyword, through the operator service).
 * Without them every start is rejected. Returns the names it added. The time-skipping test server leaves its
 * list call unimplemented, so every name is asked for, and it refuses a request that holds a registered name
 * with ALREADY_EXISTS, adding none of the request: there, each name is asked for alone, and a name it holds
 * already counts as registered.
 */
export async function ensureSearchAttributes(
  connection: { operatorService: OperatorService },
  namespace: string,
): Promise<string[]> {
  const wanted = WEBHOOK_SEARCH_ATTRIBUTES.map((key) => key.name);
  let missing = wanted;
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    const existing = customAttributes ?? {};
    const wrongType = wanted.filter((name) => name in existing && existing[name] !== KEYWORD);
    if (wrongType.length) {
      throw new TemporalSetupError(
        `Temporal namespace ${namespace} has ${wrongType.join(', ')} with a type other than Keyword; the ` +
          `webhooks need Keyword`,
      );
    }
    missing = wanted.filter((name) => !(name in existing));
  } catch (error) {
    if (grpcCodeOf(error) !== GrpcStatus.UNIMPLEMENTED) throw asSetupError(error, namespace);
  }
  if (!missing.length) return [];
  const add = (names: string[]) =>
    connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(names.map((name) => [name, KEYWORD])),
    });
  try {
    await add(missing);
    return missing;
  } catch (error) {
    if (grpcCodeOf(error) !== GrpcStatus.ALREADY_EXISTS) throw asSetupError(error, namespace);
  }
  const added: string[] = [];
  for (const name of missing) {
    try {
      await add([name]);
      added.push(name);
    } catch (error) {
      if (grpcCodeOf(error) !== GrpcStatus.ALREADY_EXISTS) throw asSetupError(error, namespace);
    }
  }
  return added;
}

/** Unreachable servers stay errors to retry; a refusal becomes one line that says what to run. */
function asSetupError(error: unknown, namespace: string): unknown {
  if (error instanceof TemporalSetupError || !isRefusal(error)) return error;
  const reason = refusalReason(error);
  return new TemporalSetupError(
    `Temporal refused to register the webhook search attributes in namespace ${namespace} (${reason}); ` +
      `register them once with: ${REGISTER_BY_HAND} --namespace ${namespace}`,
  );
}
