import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCommand } from "./command.ts";

/** Paths of the PEM files {@link createPki} writes. */
export type Pki = {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  serviceAccountPublicKey: string;
  serviceAccountPrivateKey: string;
};

/** DNS names every in-cluster client may use for the API server. */
const API_SERVER_DNS_NAMES = [
  "localhost",
  "kubernetes",
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
];

/**
 * Writes into `dir`: a self-signed CA (ECDSA P-256, 10 years), an API-server serving certificate signed
 * by it (1 year) with SANs for `bridgeIP`, 127.0.0.1, the first Service IP `kubernetesServiceIP` and the
 * `kubernetes.default…` names, and an RSA-2048 ServiceAccount signing key pair (PKCS#8 / SPKI PEM).
 * Uses the openssl CLI for certificates (node:crypto cannot issue them). Throws `unavailable` if openssl
 * fails.
 */
export async function createPki(dir: string, bridgeIP: string, kubernetesServiceIP: string): Promise<Pki> {
  mkdirSync(dir, { recursive: true });
  const pki: Pki = {
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    servingCert: join(dir, "apiserver.crt"),
    servingKey: join(dir, "apiserver.key"),
    serviceAccountPublicKey: join(dir, "sa.pub"),
    serviceAccountPrivateKey: join(dir, "sa.key"),
  };
  const config = join(dir, "openssl.cnf");
  writeFileSync(config, opensslConfig([bridgeIP, "127.0.0.1", kubernetesServiceIP]));
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

  await runCommand("openssl", [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    pki.caKey,
    "-out",
    pki.caCert,
    "-days",
    "3650",
    "-subj",
    "/CN=gatehouse-local-ca",
    "-config",
    config,
    "-extensions",
    "v3_ca",
  ]);
  const csr = join(dir, "apiserver.csr");
  await runCommand("openssl", [
    "req",
    "-new",
    ...ec,
    "-keyout",
    pki.servingKey,
    "-out",
    csr,
    "-subj",
    "/CN=kube-apiserver",
    "-config",
    config,
  ]);
  await runCommand("openssl", [
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    pki.caCert,
    "-CAkey",
    pki.caKey,
    "-set_serial",
    `0x${randomBytes(16).toString("hex")}`,
    "-days",
    "365",
    "-extfile",
    config,
    "-extensions",
    "v3_server",
    "-out",
    pki.servingCert,
  ]);

  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  writeFileSync(pki.serviceAccountPrivateKey, privateKey.export({ type: "pkcs8", format: "pem" }), {
    mode: 0o600,
  });
  writeFileSync(pki.serviceAccountPublicKey, publicKey.export({ type: "spki", format: "pem" }));
  return pki;
}

function opensslConfig(ips: readonly string[]): string {
  const alt = [
    ...API_SERVER_DNS_NAMES.map((name, i) => `DNS.${i + 1} = ${name}`),
    ...ips.map((ip, i) => `IP.${i + 1} = ${ip}`),
  ];
  return [
    "[req]",
    "distinguished_name = dn",
    "[dn]",
    "[v3_ca]",
    "basicConstraints = critical,CA:TRUE",
    "keyUsage = critical,keyCertSign,cRLSign,digitalSignature",
    "subjectKeyIdentifier = hash",
    "[v3_server]",
    "basicConstraints = critical,CA:FALSE",
    "keyUsage = critical,digitalSignature,keyEncipherment",
    "extendedKeyUsage = serverAuth",
    "subjectKeyIdentifier = hash",
    "authorityKeyIdentifier = keyid,issuer",
    "subjectAltName = @alt",
    "[alt]",
    ...alt,
    "",
  ].join("\n");
}
