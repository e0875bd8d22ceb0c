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

/** One host setting a scheme needs (`hosts.settings.<key>`), and what the scenario had. */
export interface SettingChange {
  key: string;
  /** The scenario's value before (undefined: not set, so the API's default applied). */
  from: unknown;
  to: unknown;
}

/** The host settings (GET /api/schemes `host_settings`) a scheme's configuration needs that the
 * scenario does not have yet. Host settings apply to every configuration of the scenario, so a
 * change is shown to the user, and one that replaces a value the scenario set explicitly is
 * listed apart (`replaced`): the baselines then run with it too. */
export function hostSettingsChanges(
  scenario: unknown,
  wanted: Record<string, unknown> | undefined,
): { added: SettingChange[]; replaced: SettingChange[] } {
  const hosts = scenario && typeof scenario === 'object' ? (scenario as { hosts?: unknown }).hosts : undefined;
  const settings = hosts && typeof hosts === 'object' ? (hosts as { settings?: unknown }).settings : undefined;
  const have = settings && typeof settings === 'object' ? (settings as Record<string, unknown>) : {};
  const added: SettingChange[] = [];
  const replaced: SettingChange[] = [];
  for (const [key, to] of Object.entries(wanted ?? {})) {
    const from = have[key];
    if (from === to) continue;
    (from === undefined ? added : replaced).push({ key, from, to });
  }
  return { added, replaced };
}

/** "timestamps: true → false" for a message. */
export function describeChange(c: SettingChange): string {
  return c.from === undefined
    ? `hosts.settings.${c.key}: ${JSON.stringify(c.to)}`
    : `hosts.settings.${c.key}: ${JSON.stringify(c.from)} → ${JSON.stringify(c.to)}`;
}
