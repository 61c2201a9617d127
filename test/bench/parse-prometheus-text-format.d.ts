// The package ships no types: it parses Prometheus' text format into prom2json-shaped objects.
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
