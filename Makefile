# The two commands of the README, plus the benchmarks.
#   make run    install what is missing, build Release, serve 127.0.0.1:9200 with ./data
#   make test   install what is missing, build, run every test (also under ASan+UBSan)
#   make bench  build Release and run the ingest/query benchmark
#               (10M events over 5 day partitions, query and export figures only:
#               make bench BENCH_ARGS="--events 10000000 --days 5 --skip baseline,beats,redaction,detectors")
#   make bench-web  build Release and time the page in Chromium with 1M events stored
#               (tests/web/perf.mjs; fewer: make bench-web BENCH_WEB_ARGS="--events 200000")
#   make fuzz   run the libFuzzer targets for FUZZ_SECONDS each (clang)
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
LISTEN ?= 127.0.0.1:9200
# Unity build (CMake's UNITY_BUILD): each target's sources are compiled in
# batches of UNITY_BATCH files, one translation unit per batch, so the
# Boost/Beast/simdjson headers are parsed once per batch instead of once per
# file. `make build UNITY=OFF` builds file by file (quicker to rebuild after
# editing one file). Sources of one target must not reuse a name in an
# anonymous namespace; tests/integration/*.cpp each have a namespace of their own.
UNITY ?= ON
UNITY_BATCH ?= 8
UNITY_FLAGS = -DCMAKE_UNITY_BUILD=$(UNITY) -DCMAKE_UNITY_BUILD_BATCH_SIZE=$(UNITY_BATCH)
# Ninja starts a target's compiles without waiting for the libraries it links
# (make's generator does wait), which keeps both cores busy when one large
# batch is left. A build directory made by another generator is reconfigured.
GENERATOR ?= Ninja
CONFIGURE = cmake -S . -G "$(GENERATOR)" $(UNITY_FLAGS)
# $(call fresh_cache,DIR): drop DIR's CMake cache when another generator made it.
fresh_cache = grep -qs 'CMAKE_GENERATOR:INTERNAL=$(GENERATOR)$$' $(1)/CMakeCache.txt || \
	rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles
DATA ?= ./data

.PHONY: all deps build run test test-deps test-release test-asan test-node-deps bench bench-web fuzz format clean

all: build

deps:
	./deploy/install-deps.sh

build: deps
	$(call fresh_cache,$(BUILD))
	$(CONFIGURE) -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/server/dashcam --listen $(LISTEN) --data-dir $(DATA)

test: test-release test-asan

# What only the tests need (ClickHouse: deploy/install-deps.sh --tests).
test-deps: deps
	./deploy/install-deps.sh --tests

# npm packages of the tests that drive dashcam with real clients (pinned by
# package-lock.json); installed once.
test-node-deps: deps
	[ -d tests/es_client/node_modules ] || npm ci --prefix tests/es_client --no-audit --no-fund
	[ -d tests/web/node_modules ] || npm ci --prefix tests/web --no-audit --no-fund

test-release: build test-deps test-node-deps
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# -g1 (line tables): enough for the sanitizers' stack traces, and each
# template-heavy file compiles noticeably faster than with full -g.
# The browser tests (label `browser`) run in the Release pass only: they test
# the page's JavaScript, and every endpoint they call is driven under the
# sanitizers by the integration tests, at a fraction of the time. The
# differential query test on ClickHouse runs there only too (160 s under the
# sanitizers, most of it the in-test reference evaluator): it checks query
# semantics, and the ClickHouse store's code runs under the sanitizers in
# clickhouse_test. The suites run a second time on ClickHouse
# (integration_on_clickhouse_*, ~3 min of a core) run in Release only too:
# of the code they reach beyond clickhouse_test, storage/scan_exploration.cpp
# runs under the sanitizers in storage_tests (over a SQLite store); the
# ClickHouse store's level/index histograms and runs rollup do not.
test-asan: deps test-deps test-node-deps
	$(call fresh_cache,$(ASAN_BUILD))
	$(CONFIGURE) -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
	  -DDASHCAM_SANITIZE=ON -DDASHCAM_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS) -LE browser \
	  -E 'QueryDifferentialTest.TheClickHouseBackend|integration_on_clickhouse_'

bench: build
	$(BUILD)/tests/bench/dashcam_bench --server $(BUILD)/server/dashcam $(BENCH_ARGS)

# The page's first search, a typed query and a drag-zoom, timed in Chromium
# against 1M generated events (printed, not asserted; a few minutes).
CHROMIUM ?= /usr/bin/chromium
bench-web: build test-node-deps
	node tests/web/perf.mjs $(BUILD)/server/dashcam $(CHROMIUM) \
	  --bench $(BUILD)/tests/bench/dashcam_bench $(BENCH_WEB_ARGS)

# libFuzzer targets (clang), each run for FUZZ_SECONDS; new crashes land in
# build-fuzz/crash-* (add them to tests/fuzz/corpus/<target>/ once fixed).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= bulk_decoder query_parser es_query beats_frame redactor
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDASHCAM_FUZZ=ON -DDASHCAM_BENCH=OFF
	cmake --build build-fuzz -j$(JOBS) $(foreach t,$(FUZZ_TARGETS),--target fuzz_$(t))
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus-$$t && \
	  (cd build-fuzz && ./tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    corpus-$$t ../tests/fuzz/corpus/$$t) || exit 1; \
	done

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
