/**
 * Where each setting of a config came from (an override, the environment, a line of the settings
 * file, the default), kept beside the config loadConfig returned, so that a message about a
 * setting can say where to change it.
 */
import { SETTINGS, type Config } from './schema.ts';

export type Origin =
  { kind: 'override' | 'environment' | 'default' } | { kind: 'file'; file: string; line: number };

interface Sources {
  /** The settings file read, or that would have been read had it existed. */
  file: string | undefined;
  of: Record<string, Origin>;
}

const sources = new WeakMap<object, Sources>();

/** Called by loadConfig for each config it returns. */
export function recordSources(config: Config, known: Sources): void {
  sources.set(config, known);
}

/** Where a setting is set, or would be read when it is not (`set` false). */
export interface SettingSource {
  set: boolean;
  /** "the environment", "<file> (line 3)", or unset "the environment or <file>". */
  where: string;
}

/**
 * Where `config`'s value of `key` comes from, for advice in messages (where to change it);
 * undefined for an override or an object loadConfig did not return (a copy included).
 */
export function settingSource(config: object, key: keyof Config): SettingSource | undefined {
  const known = sources.get(config);
  const origin = known?.of[key];
  if (known === undefined || origin === undefined) return undefined;
  switch (origin.kind) {
    case 'file':
      return { set: true, where: `${origin.file} (line ${origin.line})` };
    case 'environment':
      return { set: true, where: 'the environment' };
    case 'override':
      return undefined;
    case 'default':
      return {
        set: false,
        where: `the environment or ${known.file ?? `a settings file (${SETTINGS.configFile.env} is empty)`}`,
      };
  }
}
