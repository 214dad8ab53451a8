//! Parameters of the memory system: per-core L1D and L2, the shared LLC with
//! its DCA (DDIO) ways, coherence transfers and DRAM.
//!
//! Cache latencies are load-to-use totals in core cycles for a hit at that
//! level (what a pointer-chasing benchmark reports), converted with each
//! core's cycle time; DRAM latency is the unloaded load-to-use latency in
//! picoseconds. Each preset field names its row in `reference/params.md` or
//! says it is an estimate.

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};

use super::cache::LINE_BYTES;
use super::ddr::{AddressMap, DdrTiming, DramModel};
use super::prefetch::PrefetchConfig;

/// Most miss registers a cache level accepts (gem5's classic caches use 2
/// to 46; they size the prefetcher's table of prefetches in flight).
pub const MAX_MSHRS: u32 = 1024;

/// A private cache (L1D or L2).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity (bytes); a multiple of `ways` × 64 with a power-of-two set count.
    pub size_bytes: u64,
    /// Associativity, 1..=64.
    pub ways: u32,
    /// Load-to-use latency of a hit (core cycles).
    pub latency_cycles: u32,
    /// Outstanding misses the level can track; the core timing model uses it
    /// to bound memory-level parallelism.
    pub mshrs: u32,
}

/// How the LLC relates to the private caches.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Inclusion {
    /// Every line in an L1/L2 is also in the LLC; an LLC eviction
    /// back-invalidates the private copies (Intel client and pre-SKX server parts).
    Inclusive,
    /// Fills from DRAM bypass the LLC; L2 victims, dirty or clean, are written
    /// into it (a victim cache: SKX and later, Arm CMN system-level caches).
    NonInclusive,
}

/// What a core's read of a line it finds in the LLC does to the LLC's copy.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CoreRead {
    /// The LLC keeps its copy where it is (in its DCA way, if the device
    /// wrote it); the core's L2 gets another.
    #[default]
    Copy,
    /// The line moves to the reader's L2 and leaves the LLC, unless another
    /// core holds it; a store always takes it. A device-written line frees
    /// its DCA way when a core consumes it. Only with a non-inclusive LLC:
    /// Skylake-SP and later (docs/reference/ddio-l2.md), Arm's "mostly
    /// exclusive" CCN/CMN caches. A line that another core holds clean and
    /// the LLC does not is forwarded from that core (a transfer).
    Move,
    /// As `move`, except that a line the core finds in a DCA way is
    /// migrated to the LLC's inclusive ways (the `dca.held_ways` lowest
    /// ones) and the reader's L2 gets a copy: A4's reading of Skylake-SP
    /// and later (Park et al., ISCA'25, C1; docs/reference/ddio-l2.md). The
    /// DCA way is freed, the line keeps LLC room. Needs a non-inclusive LLC
    /// and `dca.held_ways` >= 1.
    Migrate,
}

/// What a non-inclusive LLC does with a clean line the L2 evicts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CleanVictims {
    /// Inserts it, as a victim cache does (Double Trouble saw L2 evictions
    /// land in the LLC; docs/reference/ddio-l2.md).
    #[default]
    Fill,
    /// Discards it: only dirty victims are written into the LLC. The LLC
    /// "may decide not to cache" clean victims by an undocumented policy
    /// (docs/reference/ddio-l2.md); `drop` is the bound where it caches
    /// none, as with Intel's BIOS option "LLC Dead Line Alloc" disabled and
    /// every clean victim taken as dead. No dead-block predictor is modelled.
    Drop,
}

/// Direct cache access (Intel DDIO): device writes allocate into a few LLC ways.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DcaConfig {
    pub enabled: bool,
    /// LLC ways device writes may allocate into (the highest-numbered ones).
    pub ways: u32,
    /// LLC ways (the lowest-numbered ones) a device write allocates into
    /// instead when a core's private cache held the line it overwrites, as
    /// Skylake-SP's second I/O region does (docs/reference/ddio-l2.md); 0:
    /// the `ways` above. Only a non-inclusive LLC can miss such a line.
    #[serde(default)]
    pub held_ways: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlcConfig {
    /// Capacity (bytes), shared by all cores and the device.
    pub size_bytes: u64,
    pub ways: u32,
    /// Load-to-use latency of a hit (core cycles).
    pub latency_cycles: u32,
    pub inclusion: Inclusion,
    /// What a core's read of an LLC line does there (`move` needs a
    /// non-inclusive LLC).
    #[serde(default)]
    pub on_core_read: CoreRead,
    /// A clean L2 victim: written into a non-inclusive LLC or dropped (an
    /// inclusive LLC already holds it).
    #[serde(default)]
    pub clean_victims: CleanVictims,
    pub dca: DcaConfig,
    /// Slices the lines are hashed over (a mesh's CHAs, a ring's L3
    /// slices): a hash of the line number picks the slice, its low bits the
    /// set there; the sets divide into slices of a power of two. 0: no
    /// hash, the set is the line number modulo the sets.
    #[serde(default)]
    pub slices: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Independent channels; consecutive 64 B lines go to consecutive channels.
    pub channels: u32,
    /// Peak bandwidth of one channel (bytes per second).
    pub channel_bandwidth_bytes_per_s: u64,
    /// Unloaded load-to-use latency (ps); queueing for a busy channel adds to
    /// it. With `model = banks` it is the latency of a row conflict, what a
    /// random pointer chase measures; a row hit costs tRP + tRCD less.
    pub idle_latency_ps: u64,
    /// `banks`: ranks, banks and rows with DDR timing and refresh; `channel`:
    /// each channel one server of line transfers.
    pub model: DramModel,
    /// How a line address is split into row, rank, bank, column and channel.
    pub address_map: AddressMap,
    /// Ranks per channel.
    pub ranks: u32,
    /// Bank groups per rank (1 for DDR3).
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks_per_group: u32,
    /// Row buffer of one rank (bytes): the device page × devices per rank.
    pub row_bytes: u32,
    /// DDR timing of the speed grade.
    pub timing: DdrTiming,
    /// The controller's write queue (`mem/write_queue.rs`); `entries = 0`: none.
    #[serde(default)]
    pub write_queue: WriteQueueConfig,
    /// The controller's read queue (`mem/read_queue.rs`), for reads whose
    /// requester takes the completion later (`sim.core_horizon`'s held
    /// unit, `sim.dma_at_memory_time`'s payload reads on a PCIe link);
    /// `entries = 0`: none. Needs `model = banks`.
    #[serde(default)]
    pub read_queue: ReadQueueConfig,
}

/// A DRAM controller's read queue per channel (gem5 `MemCtrl`,
/// `MemInterface.read_buffer_size`, `mem_sched_policy`). Reads wait in it
/// and the controller picks the next one `tRP + tRCD` before the bus can
/// take its data: first ready (a row hit), first come, first served
/// (`frfcfs`), or in arrival order (`fcfs`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ReadQueueConfig {
    /// Reads the queue holds (gem5: 32); 0 books every read when it comes.
    pub entries: u32,
    /// Which queued read goes next (gem5: `frfcfs`).
    pub scheduler: Scheduler,
}

impl Default for ReadQueueConfig {
    /// gem5's: 32 entries, FR-FCFS.
    fn default() -> Self {
        ReadQueueConfig { entries: 32, scheduler: Scheduler::Frfcfs }
    }
}

/// How a DRAM controller orders its queued reads.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// First ready, first come, first served: the oldest read whose row is
    /// open, else the oldest.
    #[default]
    Frfcfs,
    /// In arrival order.
    Fcfs,
}

/// A DRAM controller's write queue per channel, drained in batches (gem5
/// `MemCtrl`, `MemInterface.write_buffer_size`). Writes wait in it; when it
/// holds `high_percent` of `entries`, or more than `low_percent` with no
/// read waiting, the controller issues writes, row by row (first-ready:
/// the queued writes to a row go together, rows in the order of their
/// oldest write): `min_writes` if reads wait, else until fewer than
/// `low_percent` less `min_writes` remain. A read of a queued line is
/// served from the queue. A write's latency is then the controller's
/// fixed part, not DRAM's.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct WriteQueueConfig {
    /// Lines the queue holds (gem5: 64); 0 books every write when it comes.
    pub entries: u32,
    /// Fill (% of `entries`) at which writes are forced out (gem5: 85).
    pub high_percent: u32,
    /// Fill (%) above which a channel with no read waiting issues writes
    /// (gem5: 50).
    pub low_percent: u32,
    /// Writes a drain issues before waiting reads have the channel again
    /// (gem5 `min_writes_per_switch`: 16).
    pub min_writes: u32,
}

impl Default for WriteQueueConfig {
    /// gem5's: 64 entries, marks at 85 % and 50 %, 16 writes a switch.
    fn default() -> Self {
        WriteQueueConfig { entries: 64, high_percent: 85, low_percent: 50, min_writes: 16 }
    }
}

impl DramConfig {
    /// Channels of DDR4 x8 devices, 8 Gb, two ranks of 16 banks in 4 groups
    /// and 8 KiB rows (gem5 `DDR4_2400_8x8`: 1 KiB device page × 8 devices).
    pub fn ddr4(channels: u32, channel_bandwidth_bytes_per_s: u64, idle_latency_ps: u64, timing: DdrTiming) -> DramConfig {
        DramConfig {
            channels,
            channel_bandwidth_bytes_per_s,
            idle_latency_ps,
            model: DramModel::Banks,
            address_map: AddressMap::RoRaBaCoCh, // gem5 MemInterface.addr_mapping default
            ranks: 2,
            bank_groups: 4,
            banks_per_group: 4,
            row_bytes: 8192,
            timing,
            write_queue: WriteQueueConfig::default(),
            read_queue: ReadQueueConfig::default(),
        }
    }

    /// Channels served as plain servers of line transfers (`model = channel`),
    /// each write booked as it comes (no write queue).
    pub fn flat(channels: u32, channel_bandwidth_bytes_per_s: u64, idle_latency_ps: u64) -> DramConfig {
        DramConfig {
            model: DramModel::Channel,
            write_queue: WriteQueueConfig { entries: 0, ..WriteQueueConfig::default() },
            ..DramConfig::ddr4(channels, channel_bandwidth_bytes_per_s, idle_latency_ps, DdrTiming::ddr4_2400())
        }
    }

    /// One line's burst on the data bus (ps, rounded down).
    pub fn burst_ps(&self) -> u64 {
        (LINE_BYTES as u128 * crate::engine::time::PS_PER_S as u128 / self.channel_bandwidth_bytes_per_s.max(1) as u128) as u64
    }
}

/// A core's L1 instruction cache, modelled as fully associative LRU over
/// whole code regions (`mem/code.rs`): a region hits when the code run since
/// it last ran, with itself, fits in `size_bytes`; otherwise every line of
/// it misses to the L2.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct L1iConfig {
    /// Capacity in bytes (a multiple of 64, at most 1 MiB); 0 models no
    /// instruction side (every fetch hits).
    pub size_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemConfig {
    /// The instruction cache (per core).
    #[serde(default)]
    pub l1i: L1iConfig,
    pub l1d: CacheConfig,
    pub l2: CacheConfig,
    pub llc: LlcConfig,
    pub dram: DramConfig,
    /// Latency of a load or store whose line must come from (or be taken
    /// away from) another core's private cache (core cycles).
    pub transfer_cycles: u32,
    /// Each core's L2 stride prefetcher (`mem/prefetch.rs`); off if absent.
    #[serde(default)]
    pub l2_prefetch: PrefetchConfig,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

impl MemConfig {
    /// The `altra` preset (SPEC §4): an Arm Neoverse N1 server at 3 GHz.
    pub fn altra() -> MemConfig {
        MemConfig {
            l1i: L1iConfig { size_bytes: 64 * KIB }, // SPEC §4 "L1I/L1D 64 KiB 4-way"
            l1d: CacheConfig {
                size_bytes: 64 * KIB, // SPEC §4; params §5 "Neoverse N1 L1D" (64 KB 4-way)
                ways: 4,              // SPEC §4; params §5
                // SPEC §4 says 2 (the simulated twin's value); params §5 measures
                // 4 on real N1 hardware. We follow SPEC.
                latency_cycles: 2,
                mshrs: 6, // SPEC §4
            },
            l2: CacheConfig {
                size_bytes: MIB,    // SPEC §4; params §5 "Neoverse N1 L2" (1 MB private)
                ways: 8,            // SPEC §4
                latency_cycles: 12, // SPEC §4 (params §5 measures 11)
                mshrs: 16,          // SPEC §4
            },
            llc: LlcConfig {
                size_bytes: 16 * MIB, // SPEC §4
                ways: 16,             // SPEC §4
                // params §5 "N1 LLC latency ≈ 30–40 ns" [NS]: estimate 35 ns at 3 GHz.
                latency_cycles: 105,
                // estimate: the CMN-600 system-level cache is filled by L2
                // evictions (params §5 "Neoverse N1 LLC / SLC").
                inclusion: Inclusion::NonInclusive,
                // Arm's CCN L3 is "mostly exclusive": "exclusive for data lines, except
                // where sharing patterns are detected" (Arm CoreLink CCN-502 TRM §2.1.2,
                // docs/reference/ddio-l2.md) [V, a sister interconnect of the CMN-600].
                on_core_read: CoreRead::Move,
                clean_victims: CleanVictims::Fill, // estimate: a system-level cache filled by L2 evictions, as `inclusion` above
                // SPEC §4 "DCA on 4 of its 16 ways"; held_ways: estimate, no Arm source
                // gives a second I/O region.
                dca: DcaConfig { enabled: true, ways: 4, held_ways: 0 },
                slices: 0,
            },
            dram: DramConfig::ddr4(
                4,              // SPEC §4 "DDR4-2400 with 4 channels"
                19_200_000_000, // params §4 "DDR4-2400" 19.2 GB/s per channel
                81_000,         // params §4 "Graviton2 (N1) DRAM latency" 81 ns
                DdrTiming::ddr4_2400(),
            ),
            // A line modified in another core's cache: 47 ns between Neoverse N1
            // cores on a CMN-600 mesh (AWS Graviton2; docs/reference/
            // ports-queues-cores.md §3) [V, a sister chip]; 150 cycles = 50 ns at
            // 3 GHz, within params §5's 40–100 ns and the 45–50 ns recalled for
            // Altra [R].
            transfer_cycles: 150,
            // estimate: the Neoverse N1 has L1D and L2 data prefetchers (Arm
            // Neoverse N1 TRM) whose depth Arm does not publish; gem5's
            // O3_ARM_v7a_L2 StridePrefetcher (degree 8, prefetch on access,
            // docs/reference/gem5-cores.md [V]) stands in, which is also the
            // studies' gem5 L2 (altra-gem5 shares this memory system).
            l2_prefetch: PrefetchConfig { degree: 8, per_access: 0, streams: 16 },
        }
    }

    /// The `a72-quad` preset (SPEC §4): gem5's Cortex-A72 configuration. It
    /// has no L3; devices reach memory through an I/O cache, which stands in
    /// for the LLC here: with DCA (off by default, below) device writes
    /// allocate into it (all its ways) and cores find device-written lines
    /// there; without, they go to DRAM. Simplified: as a non-inclusive
    /// LLC it also takes the L2's victims, which gem5's I/O cache does not.
    pub fn a72_quad() -> MemConfig {
        MemConfig {
            l1i: L1iConfig { size_bytes: 32 * KIB }, // SPEC §4 "L1I 32 KiB 2-way"
            l1d: CacheConfig {
                size_bytes: 64 * KIB, // SPEC §4 "L1D 64 KiB 2-way"
                ways: 2,              // SPEC §4
                latency_cycles: 2,    // SPEC §4 "L1I/L1D/L2 latency 1/2/12"
                mshrs: 6,             // SPEC §4 "2/6/16 MSHRs"
            },
            l2: CacheConfig {
                size_bytes: 2 * MIB, // SPEC §4 "L2 2 MiB 16-way"
                ways: 16,            // SPEC §4
                latency_cycles: 12,  // SPEC §4
                mshrs: 16,           // SPEC §4
            },
            llc: LlcConfig {
                size_bytes: 64 * KIB,                        // estimate: the I/O cache's size is not given
                ways: 16,                                    // estimate
                latency_cycles: 24,                          // SPEC §4 "I/O cache 24 cycles"
                inclusion: Inclusion::NonInclusive,          // see the doc comment
                // estimate: gem5's I/O cache sits beside the cores' path; their reads leave its lines.
                on_core_read: CoreRead::Copy,
                clean_victims: CleanVictims::Fill, // estimate: as `inclusion` above
                // Off: SPEC §4 gives this machine no DCA, and the kernel-bypass
                // study's baseline (its Table 1) has none; DCA is the last of
                // its accumulative enhancements. Enabled, device writes
                // allocate into the whole I/O cache.
                dca: DcaConfig { enabled: false, ways: 16, held_ways: 0 },
                slices: 0,
            },
            dram: DramConfig::ddr4(
                1,              // estimate: "DDR4-3200 (8×8)" read as one 64-bit channel of eight x8 devices
                25_600_000_000, // params §4 "DDR4-3200" 25.6 GB/s per channel
                81_000,         // estimate: as params §4 "Graviton2 (N1)" 81 ns
                DdrTiming::ddr4_3200(),
            ),
            // A line bounced between two Cortex-A72 cores of one cluster: 82–89 ns
            // (Raspberry Pi 4; docs/reference/ports-queues-cores.md §3) [V, a
            // sister chip]: 85 ns is 170 cycles at 2 GHz.
            transfer_cycles: 170,
            // gem5's classic L2Cache has no prefetcher unless one is given
            // (docs/reference/gem5-cores.md "Classic cache" [V]); the
            // kernel-bypass study's scripts were not seen to give one.
            l2_prefetch: PrefetchConfig::default(),
        }
    }

    /// The `xeon-e3-1230v2` preset (SPEC §4): a 3.3 GHz Ivy Bridge with DDIO.
    pub fn xeon_e3_1230v2() -> MemConfig {
        MemConfig {
            l1i: L1iConfig { size_bytes: 32 * KIB }, // estimate: Intel Ivy Bridge L1I 32 KB [R]
            l1d: CacheConfig {
                size_bytes: 32 * KIB, // estimate: Intel client L1D, as params §5 "SKX L1D" (32 KB 8-way 4 cycles)
                ways: 8,
                latency_cycles: 4,
                mshrs: 10, // params §11: ~10 line-fill buffers on Intel cores of that era
            },
            l2: CacheConfig {
                size_bytes: 256 * KIB, // estimate: Ivy Bridge MLC, as params §5 "Skylake-S" L2 256 KB
                ways: 8,               // estimate
                latency_cycles: 12,    // estimate: params §5 "Skylake-S" 11, Nehalem ladder ~10
                mshrs: 16,             // params §11: 16 L2 superqueue entries
            },
            llc: LlcConfig {
                size_bytes: 8 * MIB, // SPEC §4 "8 MiB LLC"
                ways: 16,            // estimate
                latency_cycles: 30,  // estimate: params §5 Nehalem ladder "L3 unshared ~40"; client ring ~30
                inclusion: Inclusion::Inclusive, // estimate: Intel client LLCs before SKX are inclusive (params §5 "Skylake-S … inclusive")
                on_core_read: CoreRead::Copy, // an inclusive LLC keeps every line the cores hold
                clean_victims: CleanVictims::Fill, // an inclusive LLC already holds a clean victim: never applies
                // params §3 "Default value" 2 ways (estimate for Ivy Bridge); an inclusive
                // LLC holds every line a core does, so held_ways never applies.
                dca: DcaConfig { enabled: true, ways: 2, held_ways: 0 },
                // estimate: one 2 MiB slice per core on the client ring (2048 sets of 16
                // ways), the slice from a hash of the address (Intel's complex addressing;
                // the hash is a stand-in, mem/cache.rs).
                slices: 4,
            },
            dram: DramConfig {
                // gem5 DDR3_1600_8x8: 8 banks, no bank groups, 1 KiB device page × 8.
                bank_groups: 1,
                banks_per_group: 8,
                ..DramConfig::ddr4(
                    2,              // estimate: dual-channel desktop platform
                    12_800_000_000, // DDR3-1600: 1600 MT/s × 8 B (params §4 rule)
                    65_000,         // estimate: params §4 "Nehalem-era reference" ~60 ns
                    DdrTiming::ddr3_1600(),
                )
            },
            // params §5 Nehalem ladder "L3 line modified in another core ~75
            // cycles" (Intel's guide) [V]; measured on Ivy Bridge-E (i7-4930K):
            // 27–37 ns, 90–120 cycles (docs/reference/ports-queues-cores.md §3)
            // [V, a sister chip].
            transfer_cycles: 75,
            // Intel 64 and IA-32 Optimization Reference Manual §2.3.5.4 (Sandy
            // Bridge's L2 streamer, kept to Cascade Lake) [R]: up to 32 streams,
            // one per 4 KiB page, two prefetches per L2 lookup, up to 20 lines
            // ahead of the demand, never across the page.
            l2_prefetch: PrefetchConfig { degree: 20, per_access: 2, streams: 32 },
        }
    }

    /// The `i9-7940x-cx5` preset (SPEC §4): a 14-core Skylake-X at 3.1 GHz
    /// with a non-inclusive, sliced L3 and DDIO.
    pub fn skylake_x_14() -> MemConfig {
        MemConfig {
            l1i: L1iConfig { size_bytes: 32 * KIB }, // estimate: Intel Skylake-SP L1I 32 KB [R]
            l1d: CacheConfig {
                size_bytes: 32 * KIB, // params §5 "SKX L1D" 32 KB 8-way 4 cycles [V]
                ways: 8,
                latency_cycles: 4,
                mshrs: 12, // params §11: ~12 L1 line-fill buffers on Skylake [V]
            },
            l2: CacheConfig {
                size_bytes: MIB,    // params §5 "SKX L2 (MLC)" 1 MB 16-way [V]
                ways: 16,
                latency_cycles: 13, // params §5: 11–13 cycles measured [V] (Intel's manual: 14 [R])
                mshrs: 16,          // params §11: 16 L2 superqueue entries [V]
            },
            llc: LlcConfig {
                // SPEC §4 19.25 MiB = 14 slices × 1.375 MiB, 11-way (params §5 "SKX L3") [V].
                size_bytes: 14 * 1408 * KIB,
                ways: 11,
                latency_cycles: 77, // params §5 "SKX L3 (LLC) ~77 cycles" (AnandTech) [V]
                inclusion: Inclusion::NonInclusive, // params §5 "SKX L3 … non-inclusive" [V]
                // A core's read moves a device-written line to its L2 (Double Trouble's
                // measurements on Skylake-SP and Cascade Lake; docs/reference/ddio-l2.md) [V].
                on_core_read: CoreRead::Move,
                clean_victims: CleanVictims::Fill, // docs/reference/ddio-l2.md: L2 evictions land in the LLC [V, Double Trouble Fig. 4a]
                // params §3 "Default value (Skylake-SP)" 0x600 = 2 of 11 ways [V]; a device
                // write to a line a core holds allocates in ways 0x003 (Double
                // Trouble, docs/reference/ddio-l2.md) [V].
                dca: DcaConfig { enabled: true, ways: 2, held_ways: 2 },
                // One 1.375 MiB slice (CHA) per core, 2048 sets of 11 ways each, the set from
                // address bits 6-16 and the slice from a hash of the whole address (McCalpin,
                // TR-2021-03 and jdmccalpin/Intel_Address_Hash, 14-slice parts; Double Trouble's
                // cache_info.h: 2048 sets per slice) [V]; the hash here is a stand-in (mem/cache.rs).
                slices: 14,
            },
            // Quad-channel DDR4 (docs/reference/ports-queues-cores.md §4) [V];
            // DDR4-2666 per channel [R], 21.3 GB/s (params §4 "DDR4-2666") [C];
            // 85 ns: params §4 "Skylake-SP local DRAM idle latency ~80–90 ns" [NS].
            dram: DramConfig::ddr4(4, 21_300_000_000, 85_000, DdrTiming::ddr4_2666()),
            // A line modified in another core's cache: 47–48 ns measured on
            // Cascade Lake, the same mesh (docs/reference/ports-queues-cores.md
            // §3) [V, a sister chip]: about 145 cycles at 3.1 GHz.
            transfer_cycles: 145,
            // Intel 64 and IA-32 Optimization Reference Manual §2.3.5.4 (Sandy
            // Bridge's L2 streamer, kept to Cascade Lake) [R]: up to 32 streams,
            // one per 4 KiB page, two prefetches per L2 lookup, up to 20 lines
            // ahead of the demand, never across the page.
            l2_prefetch: PrefetchConfig { degree: 20, per_access: 2, streams: 32 },
        }
    }

    /// The `xeon-6226r-fpga` preset (SPEC §4): a 16-core Xeon Gold 6226R
    /// (Cascade Lake-SP) at 2.9 GHz with six channels of DDR4-2933. Cascade
    /// Lake keeps Skylake-SP's caches, so the cache rows are the SKX ones of
    /// params.md, as in `skylake_x_14`. Only host memory is modelled: the
    /// NIC's on-board DDR4 (SPEC §4) is not part of the memory model yet.
    pub fn xeon_6226r() -> MemConfig {
        MemConfig {
            l1i: L1iConfig { size_bytes: 32 * KIB }, // estimate: Intel Cascade Lake L1I 32 KB [R]
            l1d: CacheConfig {
                size_bytes: 32 * KIB, // params §5 "SKX L1D" 32 KB [V, a sister chip]
                ways: 8,              // params §5 "SKX L1D" 8-way [V, a sister chip]
                latency_cycles: 4,    // params §5 "SKX L1D" 4 cycles [V, a sister chip]; "Cascade Lake SP" row ≈ 4 [NS/R]
                mshrs: 12,            // params §11: ~12 L1 line-fill buffers on Skylake [V, a sister chip]
            },
            l2: CacheConfig {
                size_bytes: MIB, // params §5 "SKX L2 (MLC)" 1 MB [V, a sister chip]
                ways: 16,        // params §5 "SKX L2 (MLC)" 16-way [V, a sister chip]
                // params §5 "SKX L2": 11–13 cycles measured [V, a sister chip];
                // the "Cascade Lake SP" row and Intel's manual say ≈ 14 [R].
                latency_cycles: 13,
                mshrs: 16, // params §11: 16 L2 superqueue entries (Skylake) [V, a sister chip]
            },
            llc: LlcConfig {
                // 22 MiB = 16 slices × 1.375 MiB (params §5 "SKX L3" 1.375 MB/core
                // [V, a sister chip]; Intel's 6226R spec 22 MB, docs/reference/
                // ports-queues-cores.md §7 [V]).
                size_bytes: 16 * 1408 * KIB,
                ways: 11, // params §5 "SKX L3" 11-way [V, a sister chip]
                // params §5 "SKX L3 (LLC) ~77 cycles" (AnandTech) [V, a sister
                // chip]; the "Cascade Lake SP" row says ≈ 50–70 [NS/R].
                latency_cycles: 77,
                inclusion: Inclusion::NonInclusive, // params §5 "SKX L3 … non-inclusive" [V, a sister chip]
                // docs/reference/ddio-l2.md (Double Trouble, a Cascade Lake Xeon Silver 4208) [V, a sister chip].
                on_core_read: CoreRead::Move,
                clean_victims: CleanVictims::Fill, // docs/reference/ddio-l2.md: L2 evictions land in the LLC [V, Double Trouble Fig. 4a]
                // params §3 "Default value (Skylake-SP Xeon Gold 6140)" 0x600 = 2 of 11 ways [V, a sister chip].
                // held_ways: docs/reference/ddio-l2.md (Double Trouble, ways 0x003) [V, a sister chip].
                dca: DcaConfig { enabled: true, ways: 2, held_ways: 2 },
                // One slice per core, 2048 sets each, hashed (as skylake_x_14; McCalpin's
                // 16-slice parts) [V, a sister chip].
                slices: 16,
            },
            // Six DDR4 channels per socket (params §4 "Channels per socket"
            // SKX/CLX [R]; docs/reference/ports-queues-cores.md §7 [V]); SPEC §4
            // 140.8 GB/s system peak ÷ 6 channels = 23.47 GB/s, i.e. DDR4-2933
            // (2933⅓ MT/s × 8 B; params §4 table "DDR4-2933" 23.5 GB/s per
            // channel, 140.8 for 6 [C]); 85 ns: params §4 "Skylake-SP local DRAM
            // idle latency ~80–90 ns" [NS] and §5 "Cascade Lake SP … DRAM ≈
            // 80–90 ns" [NS/R], an estimate.
            dram: DramConfig::ddr4(6, 23_466_666_667, 85_000, DdrTiming::ddr4_2933()),
            // A line modified in another core's cache: 48 ns measured on a
            // 16-core Xeon Gold 6242, Cascade Lake (docs/reference/
            // ports-queues-cores.md §3) [V, a sister chip]: 139 cycles at 2.9 GHz.
            transfer_cycles: 139,
            // Intel 64 and IA-32 Optimization Reference Manual §2.3.5.4 (Sandy
            // Bridge's L2 streamer, kept to Cascade Lake) [R]: up to 32 streams,
            // one per 4 KiB page, two prefetches per L2 lookup, up to 20 lines
            // ahead of the demand, never across the page.
            l2_prefetch: PrefetchConfig { degree: 20, per_access: 2, streams: 32 },
        }
    }

    /// Checks the geometry and ranges; the error names the field.
    pub fn validate(&self) -> Result<()> {
        let l1i = self.l1i.size_bytes;
        check(l1i % LINE_BYTES == 0 && l1i <= MIB, "mem.l1i.size_bytes", l1i, "a multiple of 64 up to 1048576 (0: no instruction side)")?;
        check_cache("mem.l1d", self.l1d.size_bytes, self.l1d.ways)?;
        check(self.l1d.latency_cycles >= 1, "mem.l1d.latency_cycles", self.l1d.latency_cycles, ">= 1")?;
        check((1..=MAX_MSHRS).contains(&self.l1d.mshrs), "mem.l1d.mshrs", self.l1d.mshrs, &format!("1 to {MAX_MSHRS}"))?;
        check_cache("mem.l2", self.l2.size_bytes, self.l2.ways)?;
        check(self.l2.latency_cycles >= 1, "mem.l2.latency_cycles", self.l2.latency_cycles, ">= 1")?;
        check((1..=MAX_MSHRS).contains(&self.l2.mshrs), "mem.l2.mshrs", self.l2.mshrs, &format!("1 to {MAX_MSHRS}"))?;
        self.l2_prefetch.validate()?;
        let llc = &self.llc;
        check_geometry("mem.llc", llc.size_bytes, llc.ways, false)?;
        check(llc.latency_cycles >= 1, "mem.llc.latency_cycles", llc.latency_cycles, ">= 1")?;
        let sets = llc.size_bytes / (llc.ways as u64 * LINE_BYTES);
        let per = if llc.slices == 0 { 0 } else { sets / llc.slices as u64 };
        check(
            llc.slices == 0 || (llc.slices <= 1024 && per * llc.slices as u64 == sets && per.is_power_of_two()),
            "mem.llc.slices",
            llc.slices,
            &format!("0 (no hash), or up to 1024 slices of a power of two sets each (the LLC has {sets} sets)"),
        )?;
        check(
            llc.on_core_read == CoreRead::Copy || llc.inclusion == Inclusion::NonInclusive,
            "mem.llc.on_core_read",
            if llc.on_core_read == CoreRead::Move { "move" } else { "migrate" },
            "copy with an inclusive LLC (move and migrate need inclusion = non_inclusive)",
        )?;
        check(
            llc.on_core_read != CoreRead::Migrate || llc.dca.held_ways >= 1,
            "mem.llc.dca.held_ways",
            llc.dca.held_ways,
            ">= 1 with on_core_read = migrate (the inclusive ways lines migrate to)",
        )?;
        check(llc.dca.ways <= llc.ways, "mem.llc.dca.ways", llc.dca.ways, &format!("<= mem.llc.ways ({})", llc.ways))?;
        check(llc.dca.held_ways <= llc.ways, "mem.llc.dca.held_ways", llc.dca.held_ways, &format!("<= mem.llc.ways ({})", llc.ways))?;
        check(!llc.dca.enabled || llc.dca.ways >= 1, "mem.llc.dca.ways", llc.dca.ways, ">= 1 when DCA is enabled")?;
        let d = &self.dram;
        check((1..=1024).contains(&d.channels), "mem.dram.channels", d.channels, "1 to 1024")?;
        check(d.channel_bandwidth_bytes_per_s > 0, "mem.dram.channel_bandwidth_bytes_per_s", d.channel_bandwidth_bytes_per_s, "> 0")?;
        check(d.idle_latency_ps > 0, "mem.dram.idle_latency_ps", d.idle_latency_ps, "> 0")?;
        let q = &d.write_queue;
        check(q.entries <= 4096, "mem.dram.write_queue.entries", q.entries, "0 to 4096 (0: no write queue)")?;
        check((1..=100).contains(&q.high_percent), "mem.dram.write_queue.high_percent", q.high_percent, "1 to 100")?;
        check(q.low_percent < q.high_percent, "mem.dram.write_queue.low_percent", q.low_percent, &format!("< high_percent ({})", q.high_percent))?;
        check(q.min_writes >= 1, "mem.dram.write_queue.min_writes", q.min_writes, ">= 1")?;
        check(d.read_queue.entries <= 4096, "mem.dram.read_queue.entries", d.read_queue.entries, "0 to 4096 (0: no read queue)")?;
        if d.model == DramModel::Banks {
            super::ddr::validate(d)?;
        }
        check(self.transfer_cycles >= 1, "mem.transfer_cycles", self.transfer_cycles, ">= 1")?;
        Ok(())
    }
}

impl Default for MemConfig {
    fn default() -> Self {
        MemConfig::altra()
    }
}

pub(super) fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

/// A private cache needs a power-of-two set count (a mask picks the set on
/// the hot path); the LLC may have any (a sliced LLC has 2048 sets per slice).
fn check_cache(prefix: &str, size_bytes: u64, ways: u32) -> Result<()> {
    check_geometry(prefix, size_bytes, ways, true)
}

fn check_geometry(prefix: &str, size_bytes: u64, ways: u32, pow2_sets: bool) -> Result<()> {
    let field = |f: &str| format!("{prefix}.{f}");
    check((1..=64).contains(&ways), &field("ways"), ways, "1 to 64")?;
    let way_set_bytes = ways as u64 * LINE_BYTES;
    check(
        size_bytes > 0 && size_bytes.is_multiple_of(way_set_bytes),
        &field("size_bytes"),
        size_bytes,
        &format!("a positive multiple of ways × 64 B ({way_set_bytes})"),
    )?;
    let sets = size_bytes / way_set_bytes;
    check(
        !pow2_sets || sets.is_power_of_two(),
        &field("size_bytes"),
        size_bytes,
        &format!("a power-of-two number of sets (size / ({ways} ways × 64 B) = {sets})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(r: Result<()>) -> String {
        r.expect_err("a config error").field().expect("names a field").to_string()
    }

    #[test]
    fn presets_validate_and_round_trip() {
        for c in [MemConfig::altra(), MemConfig::xeon_e3_1230v2(), MemConfig::skylake_x_14(), MemConfig::xeon_6226r()] {
            c.validate().unwrap();
            let text = serde_json::to_string(&c).unwrap();
            let back: MemConfig = serde_json::from_str(&text).unwrap();
            assert_eq!(back, c);
        }
        assert!(serde_json::to_string(&MemConfig::altra()).unwrap().contains("\"non_inclusive\""));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let mut v = serde_json::to_value(MemConfig::altra()).unwrap();
        v["l2"]["assoc"] = 8.into();
        let e = serde_json::from_value::<MemConfig>(v).unwrap_err().to_string();
        assert!(e.contains("assoc"), "{e}");
    }

    #[test]
    fn impossible_geometry_names_the_field() {
        let mut c = MemConfig::altra();
        c.l2.ways = 0;
        assert_eq!(field_of(c.validate()), "mem.l2.ways");

        let mut c = MemConfig::altra();
        c.l1d.size_bytes = 64 * 1024 + 64; // not a multiple of 4 × 64
        assert_eq!(field_of(c.validate()), "mem.l1d.size_bytes");

        let mut c = MemConfig::altra();
        c.l2.size_bytes = 768 * 1024; // 1536 sets: a private cache needs a power of two
        assert_eq!(field_of(c.validate()), "mem.l2.size_bytes");
        c.l2.size_bytes = MIB;
        c.llc.size_bytes = 12 * MIB; // 12288 sets: fine for the (sliced) LLC
        c.validate().unwrap();
        c.llc.size_bytes = 12 * MIB + 64; // not a multiple of 16 × 64
        assert_eq!(field_of(c.validate()), "mem.llc.size_bytes");

        let mut c = MemConfig::altra();
        c.llc.dca.ways = 17;
        assert_eq!(field_of(c.validate()), "mem.llc.dca.ways");

        // 4e9 L2 miss registers sized the prefetcher's table of prefetches in flight (an abort).
        let mut c = MemConfig::altra();
        c.l2.mshrs = 4_000_000_000;
        assert_eq!(field_of(c.validate()), "mem.l2.mshrs");
        c.l2.mshrs = 1024;
        c.l1d.mshrs = 1025;
        assert_eq!(field_of(c.validate()), "mem.l1d.mshrs");

        let mut c = MemConfig::altra();
        c.llc.dca.held_ways = 17;
        assert_eq!(field_of(c.validate()), "mem.llc.dca.held_ways");
        c.llc.dca.held_ways = 16;
        c.validate().unwrap();

        let mut c = MemConfig::altra();
        c.llc.dca.ways = 0;
        assert_eq!(field_of(c.validate()), "mem.llc.dca.ways");
        c.llc.dca.enabled = false;
        c.validate().unwrap();

        let mut c = MemConfig::altra();
        c.dram.channels = 0;
        assert_eq!(field_of(c.validate()), "mem.dram.channels");

        let mut c = MemConfig::altra();
        c.dram.channel_bandwidth_bytes_per_s = 0;
        assert_eq!(field_of(c.validate()), "mem.dram.channel_bandwidth_bytes_per_s");
    }

    #[test]
    fn error_message_has_field_value_and_range() {
        let mut c = MemConfig::altra();
        c.l2.ways = 65;
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.contains("mem.l2.ways") && msg.contains("65") && msg.contains("1 to 64"), "{msg}");
    }
}
