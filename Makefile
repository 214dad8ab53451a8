# The two commands of the README (and the other targets below):
#   make demo   sets everything up and runs the main job (a bandwidth test)
#   make test   sets everything up and runs the tests (Rust and Python; the long
#               whole-system ones are `make test-long`)
.PHONY: setup demo test test-long bench bench-core peer golden fuzz

setup:
	scripts/setup

demo: setup
	mkdir -p out
	.venv/bin/hostsim msb --app reflector --set reflector.service_time=100ns \
	    --set reflector.queue_frames=64 --size 64 --duration 5ms --warmup 1ms \
	    --json out/msb-reflector.json --stats out/stats.txt --plot out/msb-reflector.png

# Every test but the long whole-system ones (pytest's `long` marker), the
# Python ones on two workers (a test file's tests stay on one worker).
test: setup
	cargo test --profile test-release -q -p hostsim-core
	.venv/bin/python -m pytest -q -m "not long" -n 2 --dist loadfile

# The long ones: MSB searches across machines and whole studies (README, "Tests").
test-long: setup
	.venv/bin/python -m pytest -q -m long

# The standard workloads' speed, peak RSS and MSB in one table (hostsim bench).
bench: setup
	.venv/bin/hostsim bench --rss --runs 5

# The core's own speed benchmark, without Python (crates/hostsim-core/benches/speed.rs).
bench-core: setup
	cargo bench -q -p hostsim-core --bench speed

# The harness workload in hostsim and in ns-3 side by side (bench/peers/):
# installs the `peer` extra (the ns3 package) first.
peer: setup
	.venv/bin/pip install -q "ns3==3.44.post0"
	.venv/bin/python bench/peers/compare.py

# FUZZ_RUNS inputs per cargo-fuzz target (default a million); installs the
# nightly toolchain and cargo-fuzz first if they are missing (fuzz/README.md).
FUZZ_RUNS ?= 1000000
fuzz:
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for t in wire pcap config; do \
	    cargo +nightly fuzz run -O $$t -- -runs=$(FUZZ_RUNS) -rss_limit_mb=2048 -timeout=10 || exit 1; done

# Standard host runs compared field by field with the recorded ones (a
# refactor must change no result; see scripts/golden.py).
golden: setup
	.venv/bin/python scripts/golden.py compare scripts/golden/current.json.gz
