import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { crdFor, structural } from "./crd.ts";
import { allGeneratedFiles, GENERATED_FOLDERS, generatedFiles } from "./generate.ts";
import { AGENT_SESSION, APPROVAL, KINDS } from "./kinds.ts";
import { SESSION_PHASES } from "./status/agentsession.ts";
import { ApprovalReason } from "./status/approval.ts";
import { TROUBLESHOOTING_PAGE, withGeneratedTables } from "./troubleshooting.ts";

const committed = join(import.meta.dirname, "../../../crds");

interface Schema {
  description?: string;
  enum?: string[];
  properties?: Record<string, Schema>;
}

describe("CRD generation", () => {
  it("matches the committed crds/ exactly (run `make crds` after changing a schema, policy or role)", () => {
    const files = generatedFiles();
    expect(readdirSync(committed).sort()).toEqual([...files.keys()].sort());
    for (const [name, text] of files) expect(readFileSync(join(committed, name), "utf8"), name).toBe(text);
  });

  it("matches the committed chart templates and deploy/*-rbac.yaml exactly (run `make crds`)", () => {
    const root = join(import.meta.dirname, "../../..");
    const files = allGeneratedFiles();
    for (const folder of GENERATED_FOLDERS) {
      const expected = [...files.keys()]
        .filter((p) => p.startsWith(`${folder}/`))
        .map((p) => p.slice(folder.length + 1));
      expect(readdirSync(join(root, folder)).sort(), folder).toEqual(expected.sort());
    }
    for (const [path, text] of files) expect(readFileSync(join(root, path), "utf8"), path).toBe(text);
  });

  it("matches the committed tables of docs/troubleshooting.md exactly (run `make crds`)", () => {
    const page = readFileSync(join(import.meta.dirname, "../../..", TROUBLESHOOTING_PAGE), "utf8");
    expect(page).toBe(withGeneratedTables(page));
  });

  it("describes status.phase and status.conditions from the words of each kind", () => {
    const status = (def: (typeof KINDS)[number]) =>
      (crdFor(def) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } }).spec.versions[0]
        ?.schema.openAPIV3Schema.properties?.status as Schema;
    const session = status(AGENT_SESSION).properties;
    expect(session?.phase?.enum).toEqual([...SESSION_PHASES]);
    for (const phase of SESSION_PHASES) expect(session?.phase?.description).toContain(`${phase}: `);
    for (const def of KINDS) {
      expect(status(def).properties?.conditions?.description, def.kind).toMatch(/^Conditions .* Reasons: /);
    }
    expect(status(APPROVAL).properties?.conditions?.description).toContain(ApprovalReason.ResolvedByPerson);
  });

  it("gives every kind the status subresource, printer columns, short names and the gatehouse category", () => {
    for (const def of KINDS) {
      const crd = crdFor(def) as {
        spec: {
          names: { categories: string[]; shortNames: string[] };
          versions: Array<Record<string, unknown>>;
        };
      };
      expect(crd.spec.names.categories).toEqual(["gatehouse"]);
      expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(crd.spec.versions[0]?.subresources).toEqual({ status: {} });
      expect(
        (crd.spec.versions[0]?.additionalPrinterColumns as unknown[] | undefined)?.length,
      ).toBeGreaterThan(2);
    }
  });

  it("stores free-form records as preserve-unknown-fields and string maps as string maps", () => {
    const schema = structural(
      z.toJSONSchema(
        z.object({ free: z.record(z.string(), z.unknown()), env: z.record(z.string(), z.string()) }),
        { target: "openapi-3.0" },
      ),
    );
    const props = schema.properties as Record<string, Record<string, unknown>>;
    expect(props.free?.["x-kubernetes-preserve-unknown-fields"]).toBe(true);
    expect(props.env?.additionalProperties).toEqual({ type: "string" });
  });

  it("refuses unions, which are not structural", () => {
    const union = z.toJSONSchema(z.object({ a: z.union([z.string(), z.number()]) }), {
      target: "openapi-3.0",
    });
    expect(() => structural(union)).toThrow(/\$\.a: \$ref and unions are not structural/);
  });

  it("drops zod's ±2^53 integer bounds but keeps real ones", () => {
    const crd = JSON.stringify(crdFor(APPROVAL));
    expect(crd).not.toContain("9007199254740991");
    expect(JSON.stringify(crdFor(AGENT_SESSION))).toContain('"maximum":604800');
  });
});
