import { randomBytes } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, isAbsolute, join, relative } from "node:path";
import type {
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1Volume,
  V1VolumeProjection,
} from "@kubernetes/client-node";
import { HarnessError } from "../errors.ts";
import { fieldValue } from "./env.ts";
import type { ObjectReader } from "./kube-client.ts";
import { type PodKey, podRootDir, volumeDir } from "./layout.ts";
import { resourceFieldValue } from "./resource-field.ts";
import type { ServiceAccountTokens } from "./tokens.ts";

/** What rendering volumes needs from the node. */
export type VolumeContext = {
  runDir: string;
  reader: ObjectReader;
  tokens: ServiceAccountTokens;
  podIP: string;
  hostIP: string;
};

/** One file of a rendered volume, relative to the volume's folder. */
export type VolumeFile = { path: string; data: Buffer; mode: number };

const DEFAULT_MODE = 0o644;
const DEFAULT_TOKEN_SECONDS = 3600;

/**
 * Writes every volume of `pod` under its pod folder and links each container's mounts into the pod root
 * (`$LOCAL_NODE_ROOT/<mountPath>` → the volume folder, or `<folder>/<subPath>`). Supported: secret,
 * configMap, downwardAPI, projected (serviceAccountToken through the TokenRequest API, configMap, secret,
 * downwardAPI), emptyDir and hostPath. Files are replaced atomically (write + rename) so readers never see
 * a partial token; files no longer in a volume are removed. Safe to call repeatedly — it is how tokens and
 * ConfigMap/Secret contents are refreshed. Throws `not_found` for a missing non-optional Secret/ConfigMap
 * and `invalid_arguments` for unsupported volume types or unsafe paths.
 */
export async function syncVolumes(pod: V1Pod, key: PodKey, ctx: VolumeContext): Promise<void> {
  const targets = new Map<string, string>();
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.hostPath) {
      targets.set(volume.name, volume.hostPath.path);
      continue;
    }
    const dir = volumeDir(ctx.runDir, key, volume.name);
    mkdirSync(dir, { recursive: true });
    targets.set(volume.name, dir);
    if (volume.emptyDir) continue;
    writeVolume(dir, await volumeFiles(pod, key, volume, ctx));
  }
  const root = podRootDir(ctx.runDir, key);
  mkdirSync(root, { recursive: true });
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const container of containers) {
    for (const mount of container.volumeMounts ?? []) {
      const target = targets.get(mount.name);
      if (target === undefined) {
        throw new HarnessError(
          "invalid_arguments",
          `volumeMount ${mount.name}: no volume of that name in the pod`,
        );
      }
      const source = mount.subPath ? inside(target, mount.subPath) : target;
      ensureSymlink(inside(root, mount.mountPath), source);
    }
  }
}

/** The files of one non-emptyDir volume (see {@link syncVolumes} for the supported types). */
export async function volumeFiles(
  pod: V1Pod,
  key: PodKey,
  volume: V1Volume,
  ctx: VolumeContext,
): Promise<VolumeFile[]> {
  const defaultMode = volume.secret?.defaultMode ?? volume.configMap?.defaultMode ?? DEFAULT_MODE;
  if (volume.secret) {
    return secretFiles(key.namespace, volume.secret.secretName ?? "", volume.secret, defaultMode, ctx);
  }
  if (volume.configMap) {
    return configMapFiles(key.namespace, volume.configMap.name ?? "", volume.configMap, defaultMode, ctx);
  }
  if (volume.downwardAPI) {
    return downwardFiles(
      pod,
      volume.name,
      volume.downwardAPI.items ?? [],
      volume.downwardAPI.defaultMode ?? DEFAULT_MODE,
      ctx,
    );
  }
  if (volume.projected) {
    const mode = volume.projected.defaultMode ?? DEFAULT_MODE;
    const files: VolumeFile[] = [];
    for (const source of volume.projected.sources ?? []) {
      files.push(...(await projectedFiles(pod, key, volume.name, source, mode, ctx)));
    }
    return files;
  }
  throw unsupported(volume.name, "this volume type");
}

async function projectedFiles(
  pod: V1Pod,
  key: PodKey,
  volumeName: string,
  source: V1VolumeProjection,
  mode: number,
  ctx: VolumeContext,
): Promise<VolumeFile[]> {
  if (source.serviceAccountToken) {
    const spec = source.serviceAccountToken;
    const token = await ctx.tokens.get(key, {
      serviceAccountName: pod.spec?.serviceAccountName ?? "default",
      audience: spec.audience,
      expirationSeconds: spec.expirationSeconds ?? DEFAULT_TOKEN_SECONDS,
    });
    return [{ path: spec.path, data: Buffer.from(token), mode }];
  }
  if (source.configMap) {
    return configMapFiles(key.namespace, source.configMap.name ?? "", source.configMap, mode, ctx);
  }
  if (source.secret) {
    return secretFiles(key.namespace, source.secret.name ?? "", source.secret, mode, ctx);
  }
  if (source.downwardAPI) return downwardFiles(pod, volumeName, source.downwardAPI.items ?? [], mode, ctx);
  throw unsupported(volumeName, "this projected source");
}

/** Files of downward-API items: each a fieldRef or a resourceFieldRef (which must name its container). */
function downwardFiles(
  pod: V1Pod,
  volumeName: string,
  items: readonly V1DownwardAPIVolumeFile[],
  mode: number,
  ctx: VolumeContext,
): VolumeFile[] {
  return items.map((item) => {
    let value: string;
    if (item.fieldRef) value = fieldValue(pod, item.fieldRef, ctx);
    else if (item.resourceFieldRef) value = resourceFieldValue(pod, item.resourceFieldRef, undefined);
    else throw unsupported(volumeName, `downwardAPI item ${item.path} without fieldRef or resourceFieldRef`);
    return { path: item.path, data: Buffer.from(value), mode: item.mode ?? mode };
  });
}

type KeyedSource = { items?: V1KeyToPath[]; optional?: boolean };

async function secretFiles(
  namespace: string,
  name: string,
  source: KeyedSource,
  mode: number,
  ctx: VolumeContext,
): Promise<VolumeFile[]> {
  const secret = await ctx.reader.secret(namespace, name);
  if (!secret) {
    if (source.optional) return [];
    throw new HarnessError("not_found", `secret "${namespace}/${name}" not found`);
  }
  const data = new Map(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")]));
  return keyedFiles(`secret "${namespace}/${name}"`, data, source, mode);
}

async function configMapFiles(
  namespace: string,
  name: string,
  source: KeyedSource,
  mode: number,
  ctx: VolumeContext,
): Promise<VolumeFile[]> {
  const cm = await ctx.reader.configMap(namespace, name);
  if (!cm) {
    if (source.optional) return [];
    throw new HarnessError("not_found", `configmap "${namespace}/${name}" not found`);
  }
  const data = new Map<string, Buffer>([
    ...Object.entries(cm.data ?? {}).map(([k, v]) => [k, Buffer.from(v)] as const),
    ...Object.entries(cm.binaryData ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")] as const),
  ]);
  return keyedFiles(`configmap "${namespace}/${name}"`, data, source, mode);
}

/** All keys as files, or only `items` (key → path, optional mode) when given. */
function keyedFiles(
  what: string,
  data: Map<string, Buffer>,
  source: KeyedSource,
  mode: number,
): VolumeFile[] {
  if (!source.items || source.items.length === 0) {
    return [...data].map(([path, bytes]) => ({ path, data: bytes, mode }));
  }
  return source.items.flatMap((item) => {
    const bytes = data.get(item.key);
    if (!bytes) {
      if (source.optional) return [];
      throw new HarnessError("not_found", `${what} has no key "${item.key}"`);
    }
    return [{ path: item.path, data: bytes, mode: item.mode ?? mode }];
  });
}

/** Writes `files` into `dir` atomically per file and removes files that are no longer listed. */
function writeVolume(dir: string, files: readonly VolumeFile[]): void {
  const wanted = new Set<string>();
  for (const file of files) {
    const target = inside(dir, file.path);
    wanted.add(target);
    mkdirSync(dirname(target), { recursive: true });
    const temp = `${target}.tmp-${randomBytes(4).toString("hex")}`;
    writeFileSync(temp, file.data, { mode: file.mode });
    renameSync(temp, target);
  }
  for (const existing of listFiles(dir)) if (!wanted.has(existing)) rmSync(existing, { force: true });
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Points `link` at `target`, replacing whatever was there (a stale link or an empty folder). */
function ensureSymlink(link: string, target: string): void {
  try {
    const stat = lstatSync(link);
    if (stat.isSymbolicLink() && readlinkSync(link) === target) return;
    rmSync(link, { recursive: true, force: true });
  } catch {
    // does not exist yet
  }
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(target, link);
}

/** `base/rel` (an absolute `rel` is taken relative to `base`); throws if it would leave `base`. */
function inside(base: string, rel: string): string {
  const full = join(base, rel);
  const back = relative(base, full);
  if (back === "" || back.startsWith("..") || isAbsolute(back)) {
    throw new HarnessError("invalid_arguments", `path "${rel}" must name something inside ${base}`);
  }
  return full;
}

function unsupported(volume: string, what: string): HarnessError {
  return new HarnessError(
    "invalid_arguments",
    `volume ${volume}: ${what} is not supported by the local node`,
  );
}
