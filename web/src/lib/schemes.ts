// Adding a catalogue scheme (GET /api/schemes) to a scenario's configurations: the name must be
// unique within the scenario and match the schema's pattern (^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$).
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

// A scheme's host settings (the catalogue's `host_settings`, e.g. IP-ERN needs timestamps off)
// go to the scenario's `hosts.settings`, which every configuration of the scenario shares.

export interface HostSettingChange {
  key: string;
  from: unknown; // the scenario's effective value before (its default when not written)
  to: unknown;
}

export interface HostSettingConflict {
  key: string;
  current: unknown; // what the scenario sets
  wanted: unknown; // what the scheme needs
}

export interface HostSettingsPlan {
  changes: HostSettingChange[];
  conflicts: HostSettingConflict[];
}

function settingsOf(scenario: unknown): Record<string, unknown> {
  const hosts = scenario && typeof scenario === 'object' ? (scenario as { hosts?: unknown }).hosts : undefined;
  const settings = hosts && typeof hosts === 'object' ? (hosts as { settings?: unknown }).settings : undefined;
  return settings && typeof settings === 'object' ? (settings as Record<string, unknown>) : {};
}

/** What adding a scheme does to `hosts.settings`: a setting the scenario leaves to its default is
 * written (unless the default already is the scheme's value); a setting the scenario already has
 * with another value is a conflict, never overwritten. */
export function planHostSettings(
  wanted: Readonly<Record<string, unknown>> | undefined,
  scenario: unknown,
  defaults: Readonly<Record<string, unknown>>,
): HostSettingsPlan {
  const have = settingsOf(scenario);
  const plan: HostSettingsPlan = { changes: [], conflicts: [] };
  for (const [key, to] of Object.entries(wanted ?? {})) {
    const current = have[key];
    if (current === undefined) {
      if (defaults[key] !== to) plan.changes.push({ key, from: defaults[key], to });
    } else if (current !== to) {
      plan.conflicts.push({ key, current, wanted: to });
    }
  }
  return plan;
}

const show = (v: unknown): string => (v === undefined ? 'unset' : JSON.stringify(v));

/** The plan in words, for the editor's notice. */
export function describeHostSettings(plan: HostSettingsPlan, scheme: string): string[] {
  return [
    ...plan.changes.map((c) => `Set hosts.settings.${c.key}: ${show(c.to)} (was ${show(c.from)}${c.from !== undefined ? ', the default' : ''}), as “${scheme}” needs.`),
    ...plan.conflicts.map(
      (c) => `Not changed: hosts.settings.${c.key} is ${show(c.current)} in this scenario, but “${scheme}” needs ${show(c.wanted)}; the scenario keeps your value (the API refuses some combinations on save).`,
    ),
  ];
}
