// The LLM key: from VS Code's SecretStorage, else the environment. Never a setting.

export const SECRET_KEY = 'kernelpro.llmKey';
export const ENV_KEY = 'KERNELPRO_LLM_KEY';

export interface SecretReader {
  get(key: string): Thenable<string | undefined>;
}

export async function llmKey(
  secrets: SecretReader,
  env: Record<string, string | undefined>,
): Promise<string | undefined> {
  const stored = await secrets.get(SECRET_KEY);
  return stored || env[ENV_KEY] || undefined;
}
