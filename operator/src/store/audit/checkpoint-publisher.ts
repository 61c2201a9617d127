/**
 * The port through which audit checkpoints leave Postgres (DESIGN §6). A checkpoint stored only in
 * the database it vouches for proves nothing against someone who can rewrite that database; a copy
 * elsewhere does. The port and the witness that implements it are pure (`core/witness.ts`); the
 * operator keeps the witness document in ConfigMap `gatehouse-audit-checkpoints`
 * (`kube/witness/configmap.ts`), and the chain's side of each publication comes from
 * `chain-evidence.ts`.
 */
export type { CheckpointPublisher, PublicationOutcome } from "../../core/witness.ts";
