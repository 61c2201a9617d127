/**
 * The agent pod of a session (pure; DESIGN §7): non-root, read-only root filesystem, no privilege
 * escalation, all capabilities dropped, RuntimeDefault seccomp, no ServiceAccount token automount —
 * only a projected token with audience `gatehouse`, which the gateway binds to this pod's UID.
 * `activeDeadlineSeconds` is the remaining session timeout. The agent runs spec.engine
 * (GATEHOUSE_ENGINE); a subprocess engine (pi, codex) also gets a size-limited emptyDir to write in.
 * An external session runs its own image (spec.agent.image, admitted only from the installation's list)
 * with its own entrypoint in the same pod, the same emptyDir, and an environment of URLs and the token
 * path only (externalEnv): what the pod holds is the same whichever agent runs in it.
 */
import type { V1Container, V1Pod, V1ResourceRequirements, V1Volume } from "@kubernetes/client-node";
import { MCP_ENDPOINT_PATH, MODEL_PROXY_PATH } from "../../api/agent-protocol.ts";
import type { AgentSession } from "../../api/kinds.ts";
import { API_VERSION } from "../../api/kinds.ts";
import {
  AGENT_SERVICE_ACCOUNT,
  GATEHOUSE_AUDIENCE,
  MANAGED_BY,
  SESSION_UID_LABEL,
} from "../../api/well-known.ts";

/** Where the projected token is mounted in the agent container. */
export const TOKEN_DIR = "/var/run/secrets/gatehouse";
/** Projected token lifetime in seconds (the API server's minimum is 600; the node refreshes at 80%). */
export const TOKEN_EXPIRATION_SECONDS = 600;
/**
 * The user and group every container of the agent pod runs as (the images' `USER 65532:65532`), and the
 * pod's fsGroup: the kubelet gives the Sidecar providers' credential files (owned by root, mode 0440)
 * to this group, so the non-root sidecar reads them by group and nobody else by "other".
 */
export const AGENT_POD_ID = 65532;

/**
 * A subprocess engine's writable directory (GATEHOUSE_ENGINE_DIR; pi: its settings, session files, the
 * tool bridge's socket; codex: CODEX_HOME, its config and the thread it rebuilds from the transcript): an emptyDir, since the root filesystem stays read-only. The builtin engine
 * writes nothing and gets none.
 */
export const ENGINE_DIR = "/tmp/gatehouse-engine";
export const ENGINE_VOLUME = "engine";
/** Bounds what a subprocess engine writes (one session file per run, each the transcript as Pi reads it). */
export const ENGINE_DIR_SIZE_LIMIT = "256Mi";

/** What the pod needs beyond the session itself. */
export interface AgentPodSettings {
  image: string;
  gatewayUrl: string;
  /** Seconds left of the session's timeout. */
  remainingSeconds: number;
  /** Requests and limits of the agent container (the operator's AGENT_RESOURCES). */
  resources: V1ResourceRequirements;
  /** Native sidecars of the session's Sidecar providers and their credential volumes (sidecars.ts). */
  sidecars?: { containers: V1Container[]; volumes: V1Volume[] };
}

/** The agent's OpenAI base URL: the gateway's model proxy, `<gatewayUrl>/v1/model`. */
export function modelBaseUrlOf(gatewayUrl: string): string {
  return `${gatewayUrl.replace(/\/+$/, "")}${MODEL_PROXY_PATH}`;
}

/** The agent's MCP endpoint: the gateway's `<gatewayUrl>/mcp`. */
export function mcpUrlOf(gatewayUrl: string): string {
  return `${gatewayUrl.replace(/\/+$/, "")}${MCP_ENDPOINT_PATH}`;
}

/**
 * The environment of an external agent: where the gateway, its MCP endpoint and its model proxy are
 * (OPENAI_BASE_URL is the openai SDKs' own variable for `baseURL`), the token file it authenticates
 * with, and a directory to write in. No model key and no business credential: the gateway adds the
 * model key and the providers hold theirs.
 */
function externalEnv(gatewayUrl: string): { name: string; value: string }[] {
  return [
    { name: "GATEHOUSE_ENGINE", value: "external" },
    { name: "GATEHOUSE_GATEWAY_URL", value: gatewayUrl },
    { name: "GATEHOUSE_MCP_URL", value: mcpUrlOf(gatewayUrl) },
    { name: "GATEHOUSE_TOKEN_FILE", value: `${TOKEN_DIR}/token` },
    { name: "MODEL_BASE_URL", value: modelBaseUrlOf(gatewayUrl) },
    { name: "OPENAI_BASE_URL", value: modelBaseUrlOf(gatewayUrl) },
    { name: "GATEHOUSE_ENGINE_DIR", value: ENGINE_DIR },
  ];
}

/**
 * Deterministic pod name of a session's run `attempt` (1 for the first pod; a retry takes the next)
 * after `resumes` resumptions (a pod released while awaiting approval is followed by `-<resumes>`) and
 * `continuations` (a pod that answers appended messages adds `-m<continuations>`). At most 253
 * characters: the session's name is cut to 236 (230 for a continuation, which adds a suffix).
 */
export function agentPodName(session: AgentSession, attempt = 1, resumes = 0, continuations = 0): string {
  const resumed = resumes > 0 ? `-${resumes}` : "";
  const continued = continuations > 0 ? `-m${continuations}` : "";
  const base = session.metadata.name.slice(0, continuations > 0 ? 230 : 236);
  return `${base}-agent-${attempt}${resumed}${continued}`;
}

/** The desired agent pod of run `attempt` after `resumes` resumptions. */
export function agentPodFor(
  session: AgentSession,
  attempt: number,
  settings: AgentPodSettings,
  resumes = 0,
  continuations = 0,
): V1Pod {
  const engine = session.spec.engine ?? "builtin";
  // Every engine but builtin writes: pi and codex as subprocesses, an external image as it likes.
  const subprocess = engine !== "builtin";
  const external = engine === "external" ? session.spec.agent : undefined;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: agentPodName(session, attempt, resumes, continuations),
      namespace: session.metadata.namespace,
      labels: {
        ...MANAGED_BY,
        "app.kubernetes.io/name": "gatehouse-agent",
        [SESSION_UID_LABEL]: session.metadata.uid,
      },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: "AgentSession",
          name: session.metadata.name,
          uid: session.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      serviceAccountName: AGENT_SERVICE_ACCOUNT,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: "Never",
      activeDeadlineSeconds: Math.max(1, Math.floor(settings.remainingSeconds)),
      terminationGracePeriodSeconds: 10,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: AGENT_POD_ID,
        runAsGroup: AGENT_POD_ID,
        fsGroup: AGENT_POD_ID,
        seccompProfile: { type: "RuntimeDefault" },
      },
      ...(settings.sidecars?.containers.length ? { initContainers: settings.sidecars.containers } : {}),
      containers: [
        {
          name: "agent",
          image: external?.image ?? settings.image,
          env: external
            ? externalEnv(settings.gatewayUrl)
            : [
                { name: "GATEHOUSE_GATEWAY_URL", value: settings.gatewayUrl },
                { name: "GATEHOUSE_TOKEN_FILE", value: `${TOKEN_DIR}/token` },
                // The gateway's model proxy: it adds the endpoint's key, so the pod holds none (DESIGN §7).
                { name: "MODEL_BASE_URL", value: modelBaseUrlOf(settings.gatewayUrl) },
                { name: "GATEHOUSE_ENGINE", value: engine },
                ...(subprocess ? [{ name: "GATEHOUSE_ENGINE_DIR", value: ENGINE_DIR }] : []),
              ],
          volumeMounts: [
            { name: "gatehouse-token", mountPath: TOKEN_DIR, readOnly: true },
            ...(subprocess ? [{ name: ENGINE_VOLUME, mountPath: ENGINE_DIR }] : []),
          ],
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ["ALL"] },
          },
          resources: settings.resources,
        },
      ],
      volumes: [
        {
          name: "gatehouse-token",
          projected: {
            sources: [
              {
                serviceAccountToken: {
                  audience: GATEHOUSE_AUDIENCE,
                  expirationSeconds: TOKEN_EXPIRATION_SECONDS,
                  path: "token",
                },
              },
            ],
          },
        },
        ...(subprocess ? [{ name: ENGINE_VOLUME, emptyDir: { sizeLimit: ENGINE_DIR_SIZE_LIMIT } }] : []),
        ...(settings.sidecars?.volumes ?? []),
      ],
    },
  };
}
