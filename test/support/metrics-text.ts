/** The value of one series (name and labels, as exported) in a Prometheus text answer, or undefined when it is absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * What partner_service_auth_failures_total of the API at `apiUrl` gained while `act` ran, by `reason route`
 * (only the series that moved), and the /metrics text read after it.
 */
export async function authFailuresDuring(
  apiUrl: string,
  act: () => Promise<unknown>,
): Promise<{ gained: Record<string, number>; text: string }> {
  const read = async () => {
    const text = await (await fetch(`${apiUrl}/metrics`)).text();
    const counts = new Map<string, number>();
    for (const [, reason, route, value] of text.matchAll(
      /^partner_service_auth_failures_total\{reason="([^"]*)",route="([^"]*)"\} (\S+)$/gm,
    ))
      counts.set(`${reason} ${route}`, Number(value));
    return { text, counts };
  };
  const before = await read();
  await act();
  const after = await read();
  const gained = Object.fromEntries(
    [...after.counts]
      .map(([key, value]) => [key, value - (before.counts.get(key) ?? 0)] as const)
      .filter(([, delta]) => delta > 0),
  );
  return { gained, text: after.text };
}
