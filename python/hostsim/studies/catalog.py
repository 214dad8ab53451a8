"""The shipped studies, in listing order (``hostsim study --list``).

Adding one: write its sweeps, table and figures in :mod:`.benchmarks`,
:mod:`.systems` or a module of its own, and list it here.
"""

from __future__ import annotations

from typing import Sequence

from . import Study
from . import benchmarks as b
from . import systems as s

CATALOG: Sequence[Study] = [
    Study("drop-breakdown", "bandwidth vs loss and the knee's drop classes per benchmark and size (altra)",
          b._drop_sweeps, b._drop_table, b._drop_figures),
    Study("sensitivity", "MSB as one hardware parameter moves: L2, LLC, DCA, frequency, channels, ROB (altra)",
          b._sensitivity_sweeps, b._sensitivity_table, b._sensitivity_figures),
    Study("rxptx-dca", "RXpTX loss rate vs processing interval per burst, DCA on and off (a72-quad)",
          b._rxptx_sweeps, b._rxptx_table, b._rxptx_figures),
    Study("burst-writebacks", "PMD burst size vs LLC writebacks and DRAM traffic (a72-quad, DCA on)",
          b._burst_sweeps, b._burst_table, b._burst_figures),
    Study("kernel-vs-pmd", "udp-echo MSB on the kernel stack and the PMD at 64, 512, 1518 B (altra)",
          b._stack_sweeps, b._stack_table, b._stack_figures),
    Study("memcached", "memcached requests/s vs loss rate on the PMD and the kernel stack (a72-quad)",
          b._memcached_sweeps, b._memcached_table, b._memcached_figures),
    Study("enhancements", "accumulative enhancements of a72-quad for memcached on both stacks",
          b._enhancement_sweeps, b._enhancement_table, b._enhancement_figures),
    Study("forwarding", "PC forwarding systems at 10 GbE: MSB, Table II cycle split, MSB vs clock (xeon-e3-1230v2)",
          s._forwarding_sweeps, s._forwarding_table, s._forwarding_figures, followups=s._forwarding_followups),
    Study("rx-sharing", "one RX queue, many cores: four designs x 1, 2, 4 cores (i9-7940x-cx5)",
          s._rx_sharing_sweeps, s._rx_table, s._rx_figures),
    Study("tx-schemes", "a TCP sender's transmit schemes: copy, I/OAT, zero-copy, NIC memory (xeon-6226r-fpga)",
          s._tx_sweeps, s._tx_table, s._tx_figures,
          quick_base={"host": {"app": {"tcp_send": {"writes": 2}}}}, quick_sim=False),
]
