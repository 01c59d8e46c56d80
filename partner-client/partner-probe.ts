import { request } from 'undici';
import { partnerSettings, type Config } from '../lib/config';
import { partnerAnswer, type ProbeResult } from '../lib/partner-states';
import { classifyRequestError } from './error-class';

/**
 * One probe of the partner while the breaker holds deliveries: a HEAD of the endpoint with the Bearer token.
 * It carries no event, so it spends no webhook's attempts and no partner processes it; any answer but 5XX or
 * 429 shows the partner is back, as for the breaker's count (`partnerAnswer`, lib/partner-states.ts).
 */
export async function probePartner(config: Config): Promise<ProbeResult> {
  const settings = partnerSettings(config);
  if ('missing' in settings) return { answer: 'failing', httpStatus: null, errorClass: 'other' };
  const deadline = AbortSignal.timeout(settings.timeoutMs);
  try {
    const response = await request(settings.endpoint, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${settings.token}` },
      signal: deadline,
    });
    await response.body.dump();
    return { answer: partnerAnswer(response.statusCode), httpStatus: response.statusCode, errorClass: null };
  } catch (error) {
    return {
      answer: 'failing',
      httpStatus: null,
      errorClass: classifyRequestError(error, deadline.aborted).errorClass,
    };
  }
}
