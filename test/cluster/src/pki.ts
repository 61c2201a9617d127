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
  /** The front proxy's CA (`--requestheader-client-ca-file`): apart from the client CA, as kubeadm keeps it. */
  frontProxyCaCert: string;
  /** The aggregator's client certificate and key (`--proxy-client-cert-file`, CN {@link FRONT_PROXY_CLIENT_NAME}). */
  frontProxyClientCert: string;
  frontProxyClientKey: string;
};

/** The CN of the aggregator's client certificate (`--requestheader-allowed-names`). */
export const FRONT_PROXY_CLIENT_NAME = "front-proxy-client";

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
 * `kubernetes.default…` names, an RSA-2048 ServiceAccount signing key pair (PKCS#8 / SPKI PEM), and
 * the aggregation layer's front-proxy CA with the aggregator's client certificate.
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
    frontProxyCaCert: join(dir, "front-proxy-ca.crt"),
    frontProxyClientCert: join(dir, "front-proxy-client.crt"),
    frontProxyClientKey: join(dir, "front-proxy-client.key"),
  };
  const config = join(dir, "openssl.cnf");
  writeFileSync(config, opensslConfig([bridgeIP, "127.0.0.1", kubernetesServiceIP]));
  await selfSignedCa(config, pki.caCert, pki.caKey, "gatehouse-local-ca");
  await signedCertificate(
    config,
    "v3_server",
    { cert: pki.servingCert, key: pki.servingKey },
    pki,
    "kube-apiserver",
  );
  const frontProxyCaKey = join(dir, "front-proxy-ca.key");
  await selfSignedCa(config, pki.frontProxyCaCert, frontProxyCaKey, "gatehouse-local-front-proxy-ca");
  await signedCertificate(
    config,
    "v3_client",
    { cert: pki.frontProxyClientCert, key: pki.frontProxyClientKey },
    { caCert: pki.frontProxyCaCert, caKey: frontProxyCaKey },
    FRONT_PROXY_CLIENT_NAME,
  );

  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  writeFileSync(pki.serviceAccountPrivateKey, privateKey.export({ type: "pkcs8", format: "pem" }), {
    mode: 0o600,
  });
  writeFileSync(pki.serviceAccountPublicKey, publicKey.export({ type: "spki", format: "pem" }));
  return pki;
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** A self-signed CA (ECDSA P-256, 10 years) named `cn`. */
async function selfSignedCa(config: string, cert: string, key: string, cn: string): Promise<void> {
  await runCommand("openssl", [
    "req",
    "-x509",
    ...EC_KEY,
    "-keyout",
    key,
    "-out",
    cert,
    "-days",
    "3650",
    "-subj",
    `/CN=${cn}`,
    "-config",
    config,
    "-extensions",
    "v3_ca",
  ]);
}

/** A certificate (1 year) for `cn`, with `extensions` of `config`, signed by `ca`. */
async function signedCertificate(
  config: string,
  extensions: "v3_server" | "v3_client",
  out: { cert: string; key: string },
  ca: { caCert: string; caKey: string },
  cn: string,
): Promise<void> {
  const csr = `${out.cert}.csr`;
  await runCommand("openssl", [
    "req",
    "-new",
    ...EC_KEY,
    "-keyout",
    out.key,
    "-out",
    csr,
    "-subj",
    `/CN=${cn}`,
    "-config",
    config,
  ]);
  await runCommand("openssl", [
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    ca.caCert,
    "-CAkey",
    ca.caKey,
    "-set_serial",
    `0x${randomBytes(16).toString("hex")}`,
    "-days",
    "365",
    "-extfile",
    config,
    "-extensions",
    extensions,
    "-out",
    out.cert,
  ]);
}

/**
 * A serving certificate for `dnsNames` and the CA that signed it, both new, written into `dir`: what
 * an aggregated API server presents to the API server (APIService `caBundle` = the CA). Uses openssl.
 */
export async function createServingCertificate(
  dir: string,
  dnsNames: readonly string[],
): Promise<{ caCert: string; cert: string; key: string }> {
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "openssl.cnf");
  writeFileSync(config, opensslConfig([], dnsNames));
  const ca = { caCert: join(dir, "ca.crt"), caKey: join(dir, "ca.key") };
  await selfSignedCa(config, ca.caCert, ca.caKey, `${dnsNames[0]}-ca`);
  const out = { cert: join(dir, "tls.crt"), key: join(dir, "tls.key") };
  await signedCertificate(config, "v3_server", out, ca, dnsNames[0] ?? "server");
  return { caCert: ca.caCert, ...out };
}

/**
 * A client certificate (clientAuth) for `cn`, signed by `ca`, written into `dir` as `<cn>.crt` and
 * `<cn>.key`: what tests present to a server that checks which CA signed its client and its name.
 */
export async function createClientCertificate(
  dir: string,
  ca: { caCert: string; caKey: string },
  cn: string,
): Promise<{ cert: string; key: string }> {
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "openssl.cnf");
  writeFileSync(config, opensslConfig([], ["unused.invalid"]));
  const out = { cert: join(dir, `${cn}.crt`), key: join(dir, `${cn}.key`) };
  await signedCertificate(config, "v3_client", out, ca, cn);
  return out;
}

function opensslConfig(ips: readonly string[], dnsNames: readonly string[] = API_SERVER_DNS_NAMES): string {
  const alt = [
    ...dnsNames.map((name, i) => `DNS.${i + 1} = ${name}`),
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
    "[v3_client]",
    "basicConstraints = critical,CA:FALSE",
    "keyUsage = critical,digitalSignature,keyEncipherment",
    "extendedKeyUsage = clientAuth",
    "subjectKeyIdentifier = hash",
    "authorityKeyIdentifier = keyid,issuer",
    "[alt]",
    ...alt,
    "",
  ].join("\n");
}
