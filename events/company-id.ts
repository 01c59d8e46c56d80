// Free of imports, so the workflow bundle can use it.

/** The company an event concerns, when its data names one (`company_id` or `company.id`). Never personal data. */
export function companyIdOf(event: { readonly data: unknown }): string | undefined {
  const data = event.data as { company_id?: unknown; company?: { id?: unknown } } | null;
  const id = data?.company_id ?? data?.company?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}
