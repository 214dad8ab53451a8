"""Named machine presets: a starting config that users override field by field.

A preset sets the config fields the core models today (the link) and carries
a ``machine`` description — cores, clock, caches, memory, NIC, PCIe — for the
models later issues add. The machine dict is documentation for now: it is
shown by ``hostsim inspect --preset NAME`` and never sent to the core.

Every machine field is ``{"value": ..., "source": ...}``; the source is
``"spec §4"`` where the project specification states the figure, or
``"estimate"`` where nobody has measured it yet.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List

from .units import ConfigError

SPEC = "spec §4"
ESTIMATE = "estimate"
#: The sources read for ports, queues, NICs and machines (issue 10).
PQC = "docs/reference/ports-queues-cores.md"
#: gem5's I/O path and its parameters (issue 15).
GEM5_IO = "docs/reference/io-path.md"

DEFAULT_PRESET = "altra"


def _m(value: Any, source: str = SPEC) -> Dict[str, Any]:
    return {"value": value, "source": source}


@dataclass(frozen=True)
class Preset:
    """A named machine: config overrides in user units plus a machine description."""

    name: str
    description: str
    config: Dict[str, Any]
    machine: Dict[str, Any] = field(default_factory=dict)

    def config_dict(self) -> Dict[str, Any]:
        """A fresh copy of the preset's config overrides (user units)."""
        return copy.deepcopy(self.config)

    def machine_dict(self) -> Dict[str, Any]:
        """A fresh copy of the machine description."""
        return copy.deepcopy(self.machine)


def _link(rate: str, propagation: str) -> Dict[str, Any]:
    return {"link": {"rate": rate, "propagation": propagation}}


# The Ivy Bridge machine; its X540 variant differs in the NIC and its PCIe link.
_XEON_E3 = {
    "core": _m("Intel Ivy Bridge"),
    "cores": _m(4),
    "frequency": _m("3.3GHz"),
    "llc": _m({"size": "8MiB"}),
    "dca": _m("DDIO"),
    "nic": _m("dual 10 GbE, 82599-class"),
    "ports": _m(2),
    "pcie": _m("PCIe 2.0 x8"),
    "link_rate": _m("10Gbps"),
    "network_latency": _m("1us", ESTIMATE),
}

# The Altra machine; its gem5 twin differs in the I/O path.
_ALTRA = {
    "core": _m("Arm Neoverse N1, 4-wide out-of-order"),
    "frequency": _m("3GHz"),
    "rob": _m(128),
    "iq": _m(120),
    "lq": _m(68),
    "sq": _m(72),
    "int_registers": _m(256),
    "fp_registers": _m(256),
    "l1i": _m({"size": "64KiB", "assoc": 4, "latency_cycles": 1, "mshrs": 2}),
    "l1d": _m({"size": "64KiB", "assoc": 4, "latency_cycles": 2, "mshrs": 6}),
    "l2": _m({"size": "1MiB", "assoc": 8, "latency_cycles": 12, "mshrs": 16}),
    "llc": _m({"size": "16MiB", "assoc": 16, "shared": True}),
    "dca": _m({"ways": 4, "of_ways": 16}),
    "dram": _m({"type": "DDR4-2400", "channels": 4}),
    "nic": _m("100 GbE"),
    "link_rate": _m("100Gbps"),
    "network_latency": _m("200us"),
}

_PRESETS: List[Preset] = [
    Preset(
        "altra",
        "Arm Neoverse N1 server with a 100 GbE NIC, 200 us network latency (the study's comparison machine)",
        _link("100Gbps", "200us"),
        _ALTRA,
    ),
    Preset(
        "altra-gem5",
        "the altra machine as gem5 simulates it: the NIC behind gem5's I/O crossbar, Bridge and IOCache "
        "(host.io.path = gem5_xbar) instead of a PCIe link",
        _link("100Gbps", "200us"),
        {**_ALTRA, "io_path": _m("gem5 IOXBar + Bridge + IOCache (host.io)", GEM5_IO)},
    ),
    Preset(
        "a72-quad",
        "4 x 2 GHz 3-wide cores, 2 MiB L2, DDR4-3200, 200 Gbps link with 1 us latency",
        _link("200Gbps", "1us"),
        {
            "cores": _m(4),
            "core": _m("3-wide out-of-order"),
            "frequency": _m("2GHz"),
            "rob": _m(384),
            "iq": _m(128),
            "lq": _m(128),
            "sq": _m(128),
            "int_registers": _m(128),
            "fp_registers": _m(192),
            "l1i": _m({"size": "32KiB", "assoc": 2, "latency_cycles": 1, "mshrs": 2}),
            "l1d": _m({"size": "64KiB", "assoc": 2, "latency_cycles": 2, "mshrs": 6}),
            "l2": _m({"size": "2MiB", "assoc": 16, "latency_cycles": 12, "mshrs": 16}),
            "io_cache": _m({"latency_cycles": 24, "mshrs": 16}),
            "io_path": _m("gem5 IOXBar + Bridge + IOCache (host.io)", GEM5_IO),
            "dca": _m("off (the kernel-bypass study's baseline has none; host.mem.llc.dca.enabled=true adds it)"),
            "dram": _m({"type": "DDR4-3200", "organisation": "8x8"}),
            "link_rate": _m("200Gbps"),
            "network_latency": _m("1us"),
        },
    ),
    Preset(
        "xeon-e3-1230v2",
        "3.3 GHz Ivy Bridge, 4 cores, 8 MiB LLC with DDIO, dual 10 GbE (82599-class)",
        _link("10Gbps", "1us"),
        _XEON_E3,
    ),
    Preset(
        "xeon-e3-1230v2-x540",
        "the xeon-e3-1230v2 machine with a dual-port 10GBASE-T X540 (82599 datapath) on PCIe 2.1 x8",
        _link("10Gbps", "1us"),
        {**_XEON_E3, "nic": _m("dual 10GBASE-T, X540-class (the 82599 datapath: queues and RSS as "
                                "the 82599's per " + PQC + " §1b; no separate rate limit found)", ESTIMATE),
         "pcie": _m("PCIe 2.1 x8 (5 GT/s, as PCIe 2.0 x8)", PQC + " §1b")},
    ),
    Preset(
        "i9-7940x-cx5",
        "3.1 GHz, 14 cores, 19.25 MiB L3, 100 GbE ConnectX-5-class NIC on PCIe 3.0 x16",
        _link("100Gbps", "1us"),
        {
            "cores": _m(14),
            "frequency": _m("3.1GHz"),
            "l1d": _m({"size": "32KiB"}),
            "l2": _m({"size": "1MiB"}),
            "llc": _m({"size": "19.25MiB"}),
            "dram": _m({"type": "DDR4"}),
            "nic": _m("100 GbE, ConnectX-5-class"),
            "pcie": _m("PCIe 3.0 x16"),
            "link_rate": _m("100Gbps"),
            "network_latency": _m("1us", ESTIMATE),
        },
    ),
    Preset(
        "xeon-6226r-fpga",
        "2.9 GHz 16-core Xeon Gold 6226R, 384 GiB DDR4, 100 GbE NIC with 4 x 16 GiB on-board DDR4 "
        "(host.nic.memory, for the nicmem transmit scheme) on PCIe 3.0 x16",
        _link("100Gbps", "1us"),
        {
            "core": _m("Intel Xeon Gold 6226R (Cascade Lake-SP)", PQC + " §7"),
            "cores": _m(16, PQC + " §7"),
            "frequency": _m("2.9GHz"),
            "llc": _m({"size": "22MiB", "assoc": 11}, PQC + " §7"),
            "dram": _m({"type": "DDR4", "size": "384GiB", "peak_bandwidth": "140.8GB/s"}),
            "dram_channels": _m({"type": "DDR4-2933", "channels": 6}, PQC + " §7"),
            "pcie": _m("PCIe 3.0 x16"),
            "nic": _m("100 GbE FPGA NIC"),
            "nic_memory": _m({"type": "DDR4-2400", "banks": 4, "bank_size": "16GiB"}),
            "link_rate": _m("100Gbps"),
            "network_latency": _m("1us", ESTIMATE),
        },
    ),
]

PRESETS: Dict[str, Preset] = {p.name: p for p in _PRESETS}


def names() -> List[str]:
    """Preset names in the order they are listed."""
    return [p.name for p in _PRESETS]


def get(name: str, field: str = "preset") -> Preset:
    """The preset called ``name``; an unknown name is a :class:`ConfigError`."""
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    raise ConfigError.invalid(field, name, "one of " + ", ".join(names()))
