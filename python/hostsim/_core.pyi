"""Typed stub of the compiled core (crates/hostsim-py): JSON in, JSON out."""

__version__: str
#: Frames of the measured window a fast run simulates (system/sample.rs).
SAMPLE_FRAMES: int
#: How the warning starts that a run's device buffers grew over its window (system/mod.rs).
FELL_BEHIND: str
#: How the warning starts that a fast run warmed up until the application's tables stopped growing.
TABLES_GREW: str
#: How the warning starts that DRAM row hits were passed by earlier requests booked after them (system/warnings.rs).
PASSED: str

def simulate(config_json: str) -> str:
    """Runs one simulation from the resolved config (JSON); returns the result as JSON.

    Raises ValueError for a bad config, OSError for a capture file it cannot
    write, RuntimeError for an internal error in the core.
    """

def validate(config_json: str) -> None:
    """Checks a resolved config without running it; raises ValueError."""

def version() -> str:
    """The core's version string."""

def host_preset(name: str, fitted: bool = True) -> str:
    """The full host config (``HostConfig``) of preset ``name`` as JSON, in base units;
    with ``fitted`` false, without the calibrated constants (``host/fitted.json``).

    Raises ValueError for a preset without a host model.
    """

def host_presets() -> list[str]:
    """Names of the presets that have a host model."""

def config_schema() -> str:
    """The JSON Schema (draft 2020-12) of the config contract ``SimConfig``, as JSON."""

def apps() -> str:
    """The registered applications as JSON: a list of ``{"name", "pmd", "kernel"}``
    (whether each runs on the poll-mode driver and on the kernel stack)."""

def fitted_values() -> str:
    """The constants ``hostsim calibrate`` fitted, as the core was built with them (JSON)."""

def micro(host_json: str, bench_json: str) -> str:
    """A microbenchmark on a host config (``chase``, ``read`` or ``copy``); what it measured, as JSON."""

def calibration_checks() -> str:
    """The public calibration checks (``hostsim validate``) as JSON: a list of
    ``{"area", "name", "unit", "reference", "simulated", "tolerance", "source", "pass"}``."""

def pcie_nic_model(pcie_json: str, data_bytes: int) -> str:
    """pcie-bench's 82599 + DPDK closed form for a PCIe config (``host.pcie`` as
    JSON) and frames of ``data_bytes`` without FCS, as JSON:
    ``{"published"|"described": {"up_bytes", "down_bytes", "pps"}}`` (link bytes
    per packet each way, packets per second each way)."""

def sample_rule(config_json: str, buffer_frames: int) -> tuple[int, str | None]:
    """The fast fidelity's rule for a resolved config whose device buffers
    ``buffer_frames``: the frames its warm-up sends at least
    (``sample::warmup_frames``), and why its runs are not sampled (None if they are).

    Raises ValueError for a bad config.
    """
