// Adding a catalogue scheme (GET /api/schemes) to a scenario's configurations: the name must be
// unique within the scenario and match the schema's pattern (^[A-Za-z0-9_.+-]{1,40}$).
const MAX_NAME = 40;

/** `name`, or `name-2`, `name-3`, ... (shortened to fit) when the scenario already has it. */
export function uniqueName(name: string, taken: readonly string[]): string {
  if (!taken.includes(name)) return name;
  for (let i = 2; ; i++) {
    const suffix = `-${String(i)}`;
    const candidate = name.slice(0, MAX_NAME - suffix.length) + suffix;
    if (!taken.includes(candidate)) return candidate;
  }
}

/** The names of a parsed scenario's configurations (anything else yields none). */
export function configurationNames(scenario: unknown): string[] {
  if (!scenario || typeof scenario !== 'object') return [];
  const cfgs = (scenario as { configurations?: unknown }).configurations;
  if (!Array.isArray(cfgs)) return [];
  return cfgs.flatMap((c: unknown) => {
    const n = c && typeof c === 'object' ? (c as { name?: unknown }).name : undefined;
    return typeof n === 'string' ? [n] : [];
  });
}

/** The catalogue configuration to append, renamed if its name is taken. */
export function configurationToAdd<T extends { name: string }>(configuration: T, scenario: unknown): T {
  return { ...configuration, name: uniqueName(configuration.name, configurationNames(scenario)) };
}
