import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// All Keyword, none personal: an operator can list "failed candidate webhooks of company X" in Temporal UI.
export const WEBHOOK_EVENT_TYPE = defineSearchAttributeKey('WebhookEventType', SearchAttributeType.KEYWORD);
export const WEBHOOK_ACTION = defineSearchAttributeKey('WebhookAction', SearchAttributeType.KEYWORD);
export const WEBHOOK_STATUS = defineSearchAttributeKey('WebhookStatus', SearchAttributeType.KEYWORD);
export const COMPANY_ID = defineSearchAttributeKey('CompanyId', SearchAttributeType.KEYWORD);

/** Every search attribute the workflow uses; the server must have them registered. */
export const WEBHOOK_SEARCH_ATTRIBUTES = [WEBHOOK_EVENT_TYPE, WEBHOOK_ACTION, WEBHOOK_STATUS, COMPANY_ID] as const;
