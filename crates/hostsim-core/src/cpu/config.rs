//! Parameters of one core's timing model (see [`super::core`] for the
//! formula they feed), with presets whose every field names its source or
//! says it is an estimate. Sources: SPEC §4 (machine presets) and
//! `reference/params.md` §5 (caches), §11 (line-fill buffers).

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};

/// Highest clock accepted (Hz); keeps every cycle ↔ picosecond conversion in range.
pub const MAX_FREQ_HZ: u64 = 100_000_000_000;
/// The slowest core clock taken (a setting: below it a figure in MHz was
/// most likely given without its unit, as a bare number is Hz).
pub const MIN_FREQ_HZ: u64 = 1_000_000;
/// Largest base CPI accepted (cycles per instruction).
pub const MAX_BASE_CPI: f64 = 1000.0;
/// Most store-queue / store-buffer entries accepted.
pub const MAX_STORE_ENTRIES: u32 = 1024;
/// Most L1D miss registers accepted (gem5's O3 configs use 2 to 16;
/// real cores at most a few dozen line-fill buffers).
pub const MAX_MSHRS: u32 = 1024;
/// Most reorder-buffer entries accepted (real cores: a few hundred).
pub const MAX_ROB_ENTRIES: u32 = 65536;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// Core clock (Hz).
    pub freq_hz: u64,
    /// Instructions issued per cycle at most; bounds `base_cpi` from below
    /// (≥ 1 / issue_width). An in-order core uses `inorder.issue_width`.
    pub issue_width: u32,
    /// Cycles per instruction when every access hits in the L1D (branch
    /// mispredictions, dependences and front-end stalls folded in). Resolution
    /// 0.001 cycle: the model rounds it to the nearest thousandth. An
    /// in-order core uses `inorder.base_cpi`.
    pub base_cpi: f64,
    /// Out-of-order core: misses overlap, bounded by `rob_entries` and
    /// `l1d_mshrs`. In-order: every load miss stalls for its full latency.
    pub out_of_order: bool,
    /// Reorder-buffer entries (instructions in flight); unused when in-order.
    pub rob_entries: u32,
    /// L1D miss-status holding registers (line-fill buffers on Intel): most
    /// load misses outstanding at once.
    pub l1d_mshrs: u32,
    /// Store-queue entries of an out-of-order core: stores waiting to drain
    /// into the L1D after they retire; a store that finds them all taken
    /// stalls the core. Unused when in-order (see `inorder`).
    pub sq_entries: u32,
    /// The in-order core's memory pipeline (used when `out_of_order` is false).
    #[serde(default)]
    pub inorder: InOrderConfig,
    /// Cores the machine has, all of this kind: `host.cores` may use up to this many.
    #[serde(default = "one")]
    pub cores: u32,
    /// Time the core stalls on an uncached store to a device register (an
    /// MMIO doorbell: the tail pointer of a ring), picoseconds; 0: not
    /// charged. It does not scale with the clock.
    #[serde(default = "mmio_write_ps")]
    pub mmio_write_ps: u64,
}

fn one() -> u32 {
    1
}

/// An uncached doorbell store's stall: 0 (not charged) unless a config
/// sets it. params.md §2h gives a write-combining doorbell as "tens of ns"
/// [NS] and UC writes as 50–300 ns apart on the link (anecdotal); no
/// calibration target isolates it (fitted with the PMD's stages it went to
/// its bound, docs/reference/calibration.md), so no value is assumed.
pub const DEFAULT_MMIO_WRITE_PS: u64 = 0;

fn mmio_write_ps() -> u64 {
    DEFAULT_MMIO_WRITE_PS
}

/// The in-order core, as gem5's MinorCPU has it
/// (`src/cpu/minor/BaseMinorCPU.py`, gem5 b1a44b8): it issues in order, at
/// most `issue_width` instructions a cycle; loads block on a miss; stores go
/// through a small store buffer that drains in order with a few accesses in
/// the memory system at once. Used in place of the out-of-order fields when
/// `out_of_order` is false.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InOrderConfig {
    /// Instructions issued per cycle at most (MinorCPU `executeIssueLimit`).
    pub issue_width: u32,
    /// Cycles per instruction when every access hits in the L1D, as
    /// `base_cpi` is for the out-of-order core (at least 1 / issue_width).
    pub base_cpi: f64,
    /// Store-buffer entries (MinorCPU `executeLSQStoreBufferSize`).
    pub store_buffer_entries: u32,
    /// Data accesses in the memory system at once, the store buffer's drain
    /// included (MinorCPU `executeMaxAccessesInMemory`).
    pub accesses_in_memory: u32,
}

impl Default for InOrderConfig {
    /// gem5 b1a44b8 `BaseMinorCPU`: `executeIssueLimit = 2`,
    /// `executeLSQStoreBufferSize = 5`, `executeMaxAccessesInMemory = 2`.
    /// `base_cpi` is an estimate: 1.0, IPC 1, the dual-issue pipeline at half
    /// its peak (the rule the out-of-order presets' estimates follow).
    fn default() -> Self {
        InOrderConfig { issue_width: 2, base_cpi: 1.0, store_buffer_entries: 5, accesses_in_memory: 2 }
    }
}

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

/// `<prefix>.<group>issue_width` and `base_cpi`: a width of 1..=64 and a
/// CPI the width can reach (at least 1 / width).
fn check_issue(width: u32, cpi: f64, prefix: &str, group: &str) -> Result<()> {
    let f = |name: &str| format!("{prefix}.{group}{name}");
    check((1..=64).contains(&width), &f("issue_width"), width, "1 to 64")?;
    let min_cpi = 1.0 / width as f64;
    check(
        cpi.is_finite() && cpi >= min_cpi && cpi <= MAX_BASE_CPI,
        &f("base_cpi"),
        cpi,
        &format!("{min_cpi} to {MAX_BASE_CPI} (at least 1 / {group}issue_width)"),
    )
}

impl CoreConfig {
    /// Ampere Altra (Arm Neoverse N1), SPEC §4 `altra`.
    pub fn altra() -> Self {
        CoreConfig {
            // SPEC §4: 3 GHz.
            freq_hz: 3_000_000_000,
            // SPEC §4: 4-wide (params.md §5: N1 decodes 4 per cycle).
            issue_width: 4,
            // Estimate: 0.5 (IPC 2 on packet-processing code); not measured.
            base_cpi: 0.5,
            // SPEC §4: out-of-order.
            out_of_order: true,
            // SPEC §4: ROB 128.
            rob_entries: 128,
            // SPEC §4: L1D 6 MSHRs.
            l1d_mshrs: 6,
            // SPEC §4: LQ/SQ 68/72.
            sq_entries: 72,
            // The in-order variant's memory pipeline: gem5's MinorCPU defaults (gem5 b1a44b8).
            inorder: InOrderConfig::default(),
            // Ampere Altra Q80-30: 80 cores at 3.0 GHz
            // (docs/reference/ports-queues-cores.md §6) [V].
            cores: 80,
            // setting: not charged (DEFAULT_MMIO_WRITE_PS).
            mmio_write_ps: DEFAULT_MMIO_WRITE_PS,
        }
    }

    /// The Cortex-A72-class core of SPEC §4 `a72-quad` (one core).
    pub fn a72() -> Self {
        CoreConfig {
            // SPEC §4: 2 GHz.
            freq_hz: 2_000_000_000,
            // SPEC §4: 3-wide.
            issue_width: 3,
            // Estimate: 0.67 (IPC 1.5, a 3-wide core at half its peak); not measured.
            base_cpi: 0.67,
            // SPEC §4 lists ROB/IQ/LQ/SQ: an out-of-order core.
            out_of_order: true,
            // SPEC §4: ROB 384 (SPEC's number, kept as given).
            rob_entries: 384,
            // SPEC §4: L1D 6 MSHRs.
            l1d_mshrs: 6,
            // SPEC §4: ROB/IQ/LQ/SQ 384/128/128/128.
            sq_entries: 128,
            // The in-order variant's memory pipeline: gem5's MinorCPU defaults (gem5 b1a44b8).
            inorder: InOrderConfig::default(),
            // SPEC §4: four cores.
            cores: 4,
            // setting: not charged (DEFAULT_MMIO_WRITE_PS).
            mmio_write_ps: DEFAULT_MMIO_WRITE_PS,
        }
    }

    /// Intel Ivy Bridge at 3.3 GHz (Xeon E3-1230 v2, SPEC §4 `xeon-e3-1230v2`).
    pub fn ivy_bridge_3_3ghz() -> Self {
        CoreConfig {
            // SPEC §4: 3.3 GHz.
            freq_hz: 3_300_000_000,
            // 4-wide: Sandy Bridge / Ivy Bridge allocate and retire 4 µops per cycle
            // (Intel 64 and IA-32 Optimization Reference Manual) [R: recalled, not in params.md].
            issue_width: 4,
            // Estimate: 0.5 (IPC 2); not measured.
            base_cpi: 0.5,
            // Ivy Bridge is out-of-order.
            out_of_order: true,
            // ROB 168 entries, as in Sandy Bridge (same manual) [R: recalled, not in params.md].
            rob_entries: 168,
            // params.md §5/§11: ~10 L1D line-fill buffers on Intel server cores of this
            // era (quoted for Broadwell; Sandy/Ivy Bridge also have 10).
            l1d_mshrs: 10,
            // 36 store-buffer entries, as Sandy Bridge (Intel 64 and IA-32 Optimization Reference Manual) [R: recalled, not in params.md].
            sq_entries: 36,
            // The in-order variant's memory pipeline: gem5's MinorCPU defaults (gem5 b1a44b8).
            inorder: InOrderConfig::default(),
            // SPEC §4: four cores (Xeon E3-1230 v2: 4 cores / 8 threads, Intel ARK).
            cores: 4,
            // setting: not charged (DEFAULT_MMIO_WRITE_PS).
            mmio_write_ps: DEFAULT_MMIO_WRITE_PS,
        }
    }

    /// Intel Skylake-X at 3.1 GHz (Core i9-7940X, SPEC §4 `i9-7940x-cx5`).
    pub fn skylake_x_3_1ghz() -> Self {
        CoreConfig {
            // SPEC §4: 3.1 GHz (the i9-7940X's base clock).
            freq_hz: 3_100_000_000,
            // 4-wide allocation and retirement (Intel optimization manual) [R].
            issue_width: 4,
            // Estimate: 0.5 (IPC 2), as the other cores; not measured.
            base_cpi: 0.5,
            out_of_order: true,
            // Skylake's ROB: 224 entries (Intel optimization manual) [R].
            rob_entries: 224,
            // params §11: ~12 L1 line-fill buffers on Skylake [V].
            l1d_mshrs: 12,
            // Skylake's 56 store-buffer entries (Intel optimization manual) [R].
            sq_entries: 56,
            // The in-order variant's memory pipeline: gem5's MinorCPU defaults (gem5 b1a44b8).
            inorder: InOrderConfig::default(),
            // SPEC §4: 14 cores.
            cores: 14,
            // setting: not charged (DEFAULT_MMIO_WRITE_PS).
            mmio_write_ps: DEFAULT_MMIO_WRITE_PS,
        }
    }

    /// Intel Cascade Lake-SP at 2.9 GHz (Xeon Gold 6226R, SPEC §4
    /// `xeon-6226r-fpga`). Cascade Lake keeps Skylake-SP's core unchanged,
    /// so the core's fields are the Skylake ones above.
    pub fn cascade_lake_2_9ghz() -> Self {
        CoreConfig {
            // SPEC §4: 2.9 GHz (the Gold 6226R's base clock; docs/reference/
            // ports-queues-cores.md §7) [V].
            freq_hz: 2_900_000_000,
            // 4-wide allocation and retirement, as Skylake (Intel optimization manual) [R, a sister chip].
            issue_width: 4,
            // Estimate: 0.5 (IPC 2), as the other cores; not measured.
            base_cpi: 0.5,
            // Out-of-order, as Skylake (Intel optimization manual) [R, a sister chip].
            out_of_order: true,
            // Skylake's ROB: 224 entries (Intel optimization manual) [R, a sister chip].
            rob_entries: 224,
            // params §11: ~12 L1 line-fill buffers on Skylake [V, a sister chip].
            l1d_mshrs: 12,
            // Skylake's 56 store-buffer entries (Intel optimization manual) [R, a sister chip].
            sq_entries: 56,
            // The in-order variant's memory pipeline: gem5's MinorCPU defaults (gem5 b1a44b8).
            inorder: InOrderConfig::default(),
            // 16 cores (Intel's Gold 6226R spec; docs/reference/ports-queues-cores.md §7) [V].
            cores: 16,
            // setting: not charged (DEFAULT_MMIO_WRITE_PS).
            mmio_write_ps: DEFAULT_MMIO_WRITE_PS,
        }
    }

    /// The same core made in-order (for comparisons such as issue 3 acceptance 2).
    pub fn in_order(mut self) -> Self {
        self.out_of_order = false;
        self
    }

    /// Checks every field; errors name the field as `cpu.<name>`.
    pub fn validate(&self) -> Result<()> {
        self.validate_at("cpu")
    }

    /// Checks every field; errors name the field as `<prefix>.<name>`
    /// (unit suffixes dropped, as in the rest of the config: `cpu.freq`).
    pub fn validate_at(&self, prefix: &str) -> Result<()> {
        let f = |name: &str| format!("{prefix}.{name}");
        let hint = if self.freq_hz < MIN_FREQ_HZ { " (a bare number is hertz: write 2000MHz or 2GHz, not 2000)" } else { "" };
        check((MIN_FREQ_HZ..=MAX_FREQ_HZ).contains(&self.freq_hz), &f("freq"), self.freq_hz, &format!("1 MHz to 100 GHz{hint}"))?;
        check_issue(self.issue_width, self.base_cpi, prefix, "")?;
        check((1..=MAX_ROB_ENTRIES).contains(&self.rob_entries), &f("rob_entries"), self.rob_entries, &format!("1 to {MAX_ROB_ENTRIES}"))?;
        check((1..=MAX_MSHRS).contains(&self.l1d_mshrs), &f("l1d_mshrs"), self.l1d_mshrs, &format!("1 to {MAX_MSHRS}"))?;
        check((1..=MAX_STORE_ENTRIES).contains(&self.sq_entries), &f("sq_entries"), self.sq_entries, &format!("1 to {MAX_STORE_ENTRIES}"))?;
        check(self.mmio_write_ps <= 100_000_000, &f("mmio_write_ps"), self.mmio_write_ps, "0 to 100 µs (100000000 ps)")?;
        let io = &self.inorder;
        check_issue(io.issue_width, io.base_cpi, prefix, "inorder.")?;
        check(
            (1..=MAX_STORE_ENTRIES).contains(&io.store_buffer_entries),
            &f("inorder.store_buffer_entries"),
            io.store_buffer_entries,
            &format!("1 to {MAX_STORE_ENTRIES}"),
        )?;
        check((1..=64).contains(&io.accesses_in_memory), &f("inorder.accesses_in_memory"), io.accesses_in_memory, "1 to 64")?;
        check((1..=256).contains(&self.cores), &f("cores"), self.cores, "1 to 256")?;
        Ok(())
    }

    /// Base CPI in thousandths of a cycle, rounded to nearest (the model's
    /// resolution): `base_cpi`, or `inorder.base_cpi` for an in-order core.
    pub fn base_cpi_milli(&self) -> u64 {
        let cpi = if self.out_of_order { self.base_cpi } else { self.inorder.base_cpi };
        (cpi * 1000.0).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(r: Result<()>) -> String {
        r.expect_err("a config error").field().expect("names a field").to_string()
    }

    #[test]
    fn presets_are_valid_and_keep_spec_numbers() {
        for c in [CoreConfig::altra(), CoreConfig::a72(), CoreConfig::ivy_bridge_3_3ghz(), CoreConfig::skylake_x_3_1ghz(), CoreConfig::cascade_lake_2_9ghz()] {
            c.validate().unwrap();
        }
        let a = CoreConfig::altra();
        assert_eq!((a.freq_hz, a.issue_width, a.rob_entries, a.l1d_mshrs, a.out_of_order), (3_000_000_000, 4, 128, 6, true));
        let b = CoreConfig::a72();
        assert_eq!((b.freq_hz, b.issue_width, b.rob_entries, b.l1d_mshrs), (2_000_000_000, 3, 384, 6));
        let i = CoreConfig::ivy_bridge_3_3ghz();
        assert_eq!((i.freq_hz, i.issue_width, i.rob_entries, i.l1d_mshrs), (3_300_000_000, 4, 168, 10));
        let c = CoreConfig::cascade_lake_2_9ghz();
        assert_eq!((c.freq_hz, c.cores), (2_900_000_000, 16));
        assert!(!CoreConfig::altra().in_order().out_of_order);
    }

    #[test]
    fn errors_name_the_field_value_and_range() {
        let bad = CoreConfig { freq_hz: 2000, ..CoreConfig::altra() };
        let msg = bad.validate().unwrap_err().to_string();
        assert_eq!(msg, "cpu.freq: invalid value '2000' (allowed: 1 MHz to 100 GHz (a bare number is hertz: write 2000MHz or 2GHz, not 2000))");
        assert_eq!(field_of(CoreConfig { freq_hz: 0, ..CoreConfig::altra() }.validate()), "cpu.freq");
        assert!(CoreConfig { freq_hz: MIN_FREQ_HZ, ..CoreConfig::altra() }.validate().is_ok());
        let fast = CoreConfig { freq_hz: 1000 * 1_000_000_000, ..CoreConfig::altra() }.validate().unwrap_err().to_string();
        assert_eq!(fast, "cpu.freq: invalid value '1000000000000' (allowed: 1 MHz to 100 GHz)");
        assert_eq!(field_of(CoreConfig { issue_width: 0, ..CoreConfig::altra() }.validate()), "cpu.issue_width");
        // 4-wide cannot retire faster than 0.25 CPI.
        assert_eq!(field_of(CoreConfig { base_cpi: 0.2, ..CoreConfig::altra() }.validate()), "cpu.base_cpi");
        assert_eq!(field_of(CoreConfig { base_cpi: f64::NAN, ..CoreConfig::altra() }.validate()), "cpu.base_cpi");
        assert_eq!(field_of(CoreConfig { rob_entries: 0, ..CoreConfig::altra() }.validate()), "cpu.rob_entries");
        assert_eq!(field_of(CoreConfig { l1d_mshrs: 0, ..CoreConfig::altra() }.validate()), "cpu.l1d_mshrs");
        // 4e9 miss registers sized the store buffer's ring to a power of two that wrapped to 0 (a panic).
        let big = CoreConfig { l1d_mshrs: 4_000_000_000, ..CoreConfig::altra() }.validate().unwrap_err().to_string();
        assert_eq!(big, "cpu.l1d_mshrs: invalid value '4000000000' (allowed: 1 to 1024)");
        assert_eq!(field_of(CoreConfig { rob_entries: 65537, ..CoreConfig::altra() }.validate()), "cpu.rob_entries");
        assert!(CoreConfig { l1d_mshrs: MAX_MSHRS, rob_entries: MAX_ROB_ENTRIES, ..CoreConfig::altra() }.validate().is_ok());
        assert_eq!(field_of(CoreConfig { l1d_mshrs: 0, ..CoreConfig::altra() }.validate_at("host0.cpu0")), "host0.cpu0.l1d_mshrs");
        assert_eq!(field_of(CoreConfig { sq_entries: 0, ..CoreConfig::altra() }.validate()), "cpu.sq_entries");
        let minor = |store_buffer_entries, accesses_in_memory| {
            CoreConfig { inorder: InOrderConfig { store_buffer_entries, accesses_in_memory, ..Default::default() }, ..CoreConfig::altra() }
        };
        assert_eq!(field_of(minor(0, 2).validate()), "cpu.inorder.store_buffer_entries");
        assert_eq!(field_of(minor(5, 65).validate()), "cpu.inorder.accesses_in_memory");
        let d = InOrderConfig::default();
        assert_eq!((d.issue_width, d.store_buffer_entries, d.accesses_in_memory), (2, 5, 2), "gem5 MinorCPU's defaults");
        // Dual issue cannot retire faster than 0.5 CPI.
        let fast = CoreConfig { inorder: InOrderConfig { base_cpi: 0.4, ..d }, ..CoreConfig::altra() };
        assert_eq!(field_of(fast.validate()), "cpu.inorder.base_cpi");
        // The in-order core runs at its own base CPI.
        assert_eq!((CoreConfig::altra().base_cpi_milli(), CoreConfig::altra().in_order().base_cpi_milli()), (500, 1000));
    }

    #[test]
    fn json_round_trip_rejects_unknown_fields() {
        let c = CoreConfig::ivy_bridge_3_3ghz();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<CoreConfig>(&text).unwrap(), c);
        let extra = text.replace("{", "{\"smt\":2,");
        assert!(serde_json::from_str::<CoreConfig>(&extra).is_err());
        assert_eq!(CoreConfig::a72().base_cpi_milli(), 670);
    }
}
