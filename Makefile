# Gatehouse. The two commands a new machine needs: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c

NODE_BIN := $(shell scripts/ensure-node.sh)
export PATH := $(NODE_BIN):$(PATH)

.PHONY: demo test unit unit-shuffled engines-table deps host-deps cluster helm crds lint typecheck check bench bench-cache bench-flood bench-scale chaos clean logs audit migrate

## deps: install the pinned npm packages (lockfile) on Node >= 22.19.
node_modules/.install-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@
deps: node_modules/.install-stamp

## host-deps: install the host tools the local cluster needs (iproute2, openssl, setpriv, nftables) when missing.
host-deps:
	scripts/host-deps.sh

## cluster: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (cached outside the repo).
cluster:
	test/cluster/build.sh

## helm: build Helm from its Go module (cached outside the repo, like the cluster binaries) for the chart tests.
helm:
	test/helm/build.sh

## demo: the reference story on a real local control plane; stays up for exploration until Ctrl-C (DEMO_EXIT=1 exits when done).
demo: deps host-deps cluster
	node test/e2e/demo.ts

## test: every test (unit, integration on Postgres, cluster and e2e on the real control plane).
## One worker per core for the unit, engines and integration files (vitest's default of cores − 1 ran
## them one by one on two cores); the cluster files still run one at a time, after all of those.
test: deps host-deps cluster helm
	npx vitest run --maxWorkers=100%

## unit: the tests that need neither Postgres nor a cluster (vitest project `unit`), in well under a minute.
## One worker per core: vitest's default leaves a core free, which on two cores runs the files one by one.
unit: deps
	npx vitest run --project unit --maxWorkers=100%

## unit-shuffled: the unit project with files and tests in a random order (the seed is printed): the unit
## project shares one module graph per worker, so a test that leaves state behind shows here.
unit-shuffled: deps
	npx vitest run --project unit --maxWorkers=100% --sequence.shuffle --sequence.seed=$$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')

## engines-table: run the engine conformance suite (agent-image/src/conformance/) and write its engine × case table into docs/engines.md.
engines-table: deps
	results=$$(mktemp)
	trap 'rm -f "$$results"' EXIT
	# A failing case is a ✗ in the table, so the table is written whatever the run's outcome.
	npx vitest run --project unit --project engines agent-image/src/conformance/ --reporter=json --outputFile="$$results" || true
	node agent-image/src/conformance/table.ts "$$results" docs/engines.md
	npx biome format --write docs/engines.md

## crds: regenerate crds/, the chart's templates/generated/, deploy/*-rbac.yaml and docs/troubleshooting.md's tables from operator/src/api.
crds: deps
	node operator/src/api/generate.ts

## bench: benchmarks with same-run baselines (control plane, audit chain, 200 sessions, invoke overhead, the gateway's pool size, approval → provider, session → model) and one installation at 1 000 sessions; JSON in test/bench/results/.
bench: deps host-deps cluster
	node test/bench/control-plane.ts
	node test/bench/audit.ts
	node test/bench/operator-sessions.ts
	node test/bench/invoke.ts
	node test/bench/pool-size.ts
	node test/bench/approval-dispatch.ts
	node test/bench/session-start.ts
	node test/bench/codex-relay.ts
	node test/bench/scale.ts
	GATEHOUSE_RECORD_BENCH=1 DEMO_EXIT=1 node test/e2e/demo.ts

## bench-cache: bytes per cached object of each kind with and without the cache transform, one installation's caches (10 000 sessions and Approvals), index lookups against scans; JSON in test/bench/results/cache-memory.json.
bench-cache: deps
	node --expose-gc test/bench/cache-memory.ts

## bench-scale: what one installation carries: 10 000 AgentSessions and Approvals to terminal phases (200 through real agent pods), the components' memory and CPU, API requests, reconciles and Postgres bytes per session; JSON in test/bench/results/scale.json.
bench-scale: deps host-deps cluster
	node test/bench/scale.ts --sessions 10000 --real 200

## bench-flood: one session's flood against another session's calls, with and without the gateway's limits; JSON in test/bench/results/flood.json.
bench-flood: deps host-deps cluster
	node test/bench/flood.ts

## chaos: the fault campaign (test/chaos/) for DURATION (e.g. 45m) or RUNS runs from SEED; RUN= replays one run; JSON in test/bench/results/chaos.json.
chaos: deps host-deps cluster
	CHAOS_DURATION=$(DURATION) CHAOS_RUNS=$(RUNS) CHAOS_SEED=$(SEED) CHAOS_RUN=$(RUN) node test/chaos/campaign.ts

## audit: verify the audit chain of DATABASE_URL's database, e.g. `make audit DATABASE_URL=postgres://… ARGS="--from 5"`; ARGS="--kubeconfig FILE [--namespace NS]" also compares it with the ConfigMap gatehouse-audit-checkpoints.
audit: deps
	@node operator/src/cli/gatehouse-audit.ts verify $(ARGS)

## migrate: as the owner, create the roles and apply the migrations, e.g. `make migrate DATABASE_OWNER_URL=postgres://… CONTROLLER_DATABASE_URL=postgres://…` (the runtime logins given are created; docs/upgrading.md).
migrate: deps
	@node operator/src/cli/gatehouse-migrate.ts

## logs: print a pod's container logs from the local node, e.g. `make logs POD=plant-a/my-pod`.
logs: deps
	node test/cluster/src/print-logs.ts "$(POD)"

lint: deps
	npx biome check .
	npx depcruise operator/src agent-image/src provider-images --config .dependency-cruiser.cjs

typecheck: deps
	npx tsc -p tsconfig.json --noEmit

check: lint typecheck

clean:
	rm -rf .run
