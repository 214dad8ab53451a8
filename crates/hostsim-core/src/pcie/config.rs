//! Parameters of one PCIe link between a device (the NIC) and the root
//! complex, with presets whose every field names its source or says it is an
//! estimate. Sources: `reference/params.md` §2 (pcie-bench model and data,
//! Neugebauer et al., "Understanding PCIe performance for end host
//! networking", SIGCOMM 2018) and the PCIe Base Specification.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};

/// Max Payload Size and Max Read Request Size values the spec allows (bytes).
pub const SIZE_CHOICES: &[u32] = &[128, 256, 512, 1024, 2048, 4096];
/// Read Completion Boundary values (bytes).
pub const RCB_CHOICES: &[u32] = &[64, 128, 256, 512];
/// Link widths modelled.
pub const LANE_CHOICES: &[u32] = &[1, 2, 4, 8, 16];
/// 10-bit tags (PCIe 4.0) allow at most 1023 outstanding non-posted requests per function.
pub const MAX_READ_TAGS: u32 = 1023;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcieConfig {
    /// PCIe generation, 1..=6 (2.5, 5, 8, 16, 32, 64 GT/s per lane).
    pub gen: u32,
    /// Link width in lanes: 1, 2, 4, 8 or 16.
    pub lanes: u32,
    /// Max Payload Size (bytes): largest data payload of one write or completion TLP.
    pub mps_bytes: u32,
    /// Max Read Request Size (bytes): largest read one request TLP may ask for.
    pub mrrs_bytes: u32,
    /// Read Completion Boundary (bytes); completions are split at it only if
    /// `cpl_split_at_rcb` (some older chipsets), otherwise at `mps_bytes`.
    pub rcb_bytes: u32,
    /// One-way latency device ↔ root complex, excluding serialization (ps).
    pub latency_ps: Ps,
    /// Most non-posted read requests the device keeps outstanding (read tags).
    pub read_tags: u32,
    /// 64-bit addressing: 4DW request headers (24 B per TLP on the link) instead of 3DW (20 B).
    pub addr64: bool,
    /// Split read completions at `rcb_bytes` instead of `mps_bytes`.
    #[serde(default)]
    pub cpl_split_at_rcb: bool,
    /// Posted-request header credits the root port advertises: write TLPs
    /// (and MSIs) the device may have sent that the root complex has not
    /// yet passed to memory. 0 is infinite, as the spec encodes it.
    #[serde(default)]
    pub posted_header_credits: u32,
    /// Posted-request data credits (16 B each) the root port advertises; 0 is infinite.
    #[serde(default)]
    pub posted_data_credits: u32,
    /// Non-posted-request header credits the root port advertises: read
    /// request TLPs the device may have sent that the root complex has not
    /// yet passed to memory. 0 is infinite. (A read request carries no
    /// data, so it needs no non-posted data credit.)
    #[serde(default)]
    pub nonposted_header_credits: u32,
}

/// Unused header and data credits a receiver may advertise without scaled
/// flow control (PCIe Base Specification §2.6.1; Efinix PCIe controller
/// guide, "TX Flow Control Error Handling": 127 and 2,047).
pub const MAX_HEADER_CREDITS: u32 = 127;
pub const MAX_DATA_CREDITS: u32 = 2047;
/// Bytes of one data credit (four DWords).
pub const DATA_CREDIT_BYTES: u32 = 16;

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

fn one_of(choices: &[u32]) -> String {
    let list: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
    format!("one of {}", list.join(", "))
}

/// The one-way latency used by every preset (ps) — an estimate, split out of
/// a measured round trip. params.md §2e: a 64 B read issued directly by the
/// PCIe command interface of an NFP6000 (Gen3 x8) to a Haswell Xeon
/// E5-2620v3 takes 480 ns median (`LAT_CMD_RD`; the DMA-engine path, 546 ns,
/// adds ≈ 66 ns inside the device, which belongs to the device model). That
/// round trip is request serialization (≈ 1.5 ns) + link + host + completion
/// serialization (≈ 1.5 ns) + link. We take the host side for an LLC hit as
/// ≈ 80 ns (estimate: root complex + LLC lookup; the memory model supplies
/// it as `host_time_ps`, and a DRAM miss adds ≈ 54 ns per §2e warm vs cold),
/// leaving 2 × 200 ns of link latency (estimate). The secondary summary in
/// §2e ("PCIe latency adds 300–400 ns on unloaded systems") is consistent.
pub const DEFAULT_LATENCY_PS: Ps = 200_000;

/// The root port's posted header and data credits in every preset: 0,
/// infinite (an estimate). params.md has no root port's advertised credits;
/// an FPGA controller's reset values (Efinix: 32 posted headers, 248 data
/// credits = 3,968 B) show the order, but with `DEFAULT_LATENCY_PS` each
/// way they would cap small writes at 32 per ≈ 0.4 µs.
pub const DEFAULT_POSTED_CREDITS: u32 = 0;

/// The root port's non-posted header credits in every preset: 0, infinite
/// (an estimate), for the same reason. The Efinix controller's reset value
/// is 32 (Receive Credit Limit Register 1, NPHCL); the device's read tags
/// bound its reads in flight over a longer time (a tag is held until the
/// completion is back, a credit until the request is passed on), so 32
/// credits would bind before 256 tags.
pub const DEFAULT_NONPOSTED_CREDITS: u32 = 0;

impl PcieConfig {
    /// A 100 GbE NIC on a Gen3 x16 slot.
    pub fn gen3_x16() -> Self {
        PcieConfig {
            // params.md §13 baseline: Gen3 x16 for a 100G NIC.
            gen: 3,
            lanes: 16,
            // params.md §2b "typical config used by the model/paper scripts": MPS 256, MRRS 512, RCB 64.
            mps_bytes: 256,
            mrrs_bytes: 512,
            rcb_bytes: 64,
            // Estimate: see DEFAULT_LATENCY_PS (from params.md §2e).
            latency_ps: DEFAULT_LATENCY_PS,
            // Estimate: the 8-bit Extended Tag field (256 outstanding reads), which
            // servers enable for 100 GbE NICs: covering 100 Gb/s over a ~0.5 µs
            // read round trip takes ~100 reads of 64 B in flight, more than
            // the 32 of a 5-bit tag (PCIe Base Spec, not re-read).
            read_tags: 256,
            // params.md §2b: the model's typical config uses 64-bit addresses.
            addr64: true,
            // params.md §2c: RCB not used for chunking in the model's tables.
            cpl_split_at_rcb: false,
            // Estimate: see DEFAULT_POSTED_CREDITS.
            posted_header_credits: DEFAULT_POSTED_CREDITS,
            posted_data_credits: DEFAULT_POSTED_CREDITS,
            // Estimate: see DEFAULT_NONPOSTED_CREDITS.
            nonposted_header_credits: DEFAULT_NONPOSTED_CREDITS,
        }
    }

    /// The pcie-bench measurement setup (NFP6000 on Gen3 x8): the link §2c–2f describe.
    pub fn gen3_x8() -> Self {
        // params.md §2b typical config: Gen3 x8, MPS 256, MRRS 512, RCB 64, 64-bit addresses;
        // 5-bit tags (32 outstanding reads), an estimate.
        PcieConfig { lanes: 8, read_tags: 32, ..Self::gen3_x16() }
    }

    /// An Intel 82599-class 10 GbE NIC: PCIe 2.0 x8 (5 GT/s).
    pub fn gen2_x8() -> Self {
        PcieConfig {
            // 82599 is a PCIe v2.0 x8 device (82599 datasheet, not re-read).
            gen: 2,
            lanes: 8,
            // Estimate: same platform defaults as params.md §2b (MPS 256, MRRS 512, RCB 64).
            mps_bytes: 256,
            mrrs_bytes: 512,
            rcb_bytes: 64,
            // Estimate: see DEFAULT_LATENCY_PS; Gen2 serialization is longer but is modelled separately.
            latency_ps: DEFAULT_LATENCY_PS,
            // Estimate: 5-bit Tag field, 32 outstanding reads.
            read_tags: 32,
            // params.md §2b (model default, 64-bit addresses).
            addr64: true,
            cpl_split_at_rcb: false,
            // Estimate: see DEFAULT_POSTED_CREDITS.
            posted_header_credits: DEFAULT_POSTED_CREDITS,
            posted_data_credits: DEFAULT_POSTED_CREDITS,
            // Estimate: see DEFAULT_NONPOSTED_CREDITS.
            nonposted_header_credits: DEFAULT_NONPOSTED_CREDITS,
        }
    }

    /// A 200 GbE NIC on a Gen4 x16 slot.
    pub fn gen4_x16() -> Self {
        PcieConfig {
            // params.md §13 baseline: Gen4 x16 for a 200G NIC, MPS 256, MRRS 512.
            gen: 4,
            lanes: 16,
            mps_bytes: 256,
            mrrs_bytes: 512,
            // params.md §2b typical RCB.
            rcb_bytes: 64,
            // Estimate: no Gen4 latency data in params.md; same as Gen3 (DEFAULT_LATENCY_PS).
            latency_ps: DEFAULT_LATENCY_PS,
            // Estimate: 8-bit Extended Tags (mandatory to support from PCIe 4.0) = 256.
            read_tags: 256,
            addr64: true,
            cpl_split_at_rcb: false,
            // Estimate: see DEFAULT_POSTED_CREDITS.
            posted_header_credits: DEFAULT_POSTED_CREDITS,
            posted_data_credits: DEFAULT_POSTED_CREDITS,
            // Estimate: see DEFAULT_NONPOSTED_CREDITS.
            nonposted_header_credits: DEFAULT_NONPOSTED_CREDITS,
        }
    }

    /// Checks every field; errors name the field as `pcie.<name>`.
    pub fn validate(&self) -> Result<()> {
        check((1..=6).contains(&self.gen), "pcie.gen", self.gen, "1 to 6")?;
        check(LANE_CHOICES.contains(&self.lanes), "pcie.lanes", self.lanes, &one_of(LANE_CHOICES))?;
        check(SIZE_CHOICES.contains(&self.mps_bytes), "pcie.mps_bytes", self.mps_bytes, &one_of(SIZE_CHOICES))?;
        check(SIZE_CHOICES.contains(&self.mrrs_bytes), "pcie.mrrs_bytes", self.mrrs_bytes, &one_of(SIZE_CHOICES))?;
        check(RCB_CHOICES.contains(&self.rcb_bytes), "pcie.rcb_bytes", self.rcb_bytes, &one_of(RCB_CHOICES))?;
        check(self.latency_ps <= 1_000_000_000, "pcie.latency_ps", self.latency_ps, "<= 1 ms (1000000000 ps)")?;
        check((1..=MAX_READ_TAGS).contains(&self.read_tags), "pcie.read_tags", self.read_tags, &format!("1 to {MAX_READ_TAGS}"))?;
        check(
            self.posted_header_credits <= MAX_HEADER_CREDITS,
            "pcie.posted_header_credits",
            self.posted_header_credits,
            &format!("0 (infinite) or 1 to {MAX_HEADER_CREDITS}"),
        )?;
        check(
            self.nonposted_header_credits <= MAX_HEADER_CREDITS,
            "pcie.nonposted_header_credits",
            self.nonposted_header_credits,
            &format!("0 (infinite) or 1 to {MAX_HEADER_CREDITS}"),
        )?;
        // A finite data allowance must take one TLP of Max_Payload_Size, or no write could ever be sent.
        let min_data = self.mps_bytes.div_ceil(DATA_CREDIT_BYTES);
        check(
            self.posted_data_credits == 0 || (min_data..=MAX_DATA_CREDITS).contains(&self.posted_data_credits),
            "pcie.posted_data_credits",
            self.posted_data_credits,
            &format!("0 (infinite) or {min_data} to {MAX_DATA_CREDITS} (16 B each, at least one TLP of mps_bytes)"),
        )?;
        Ok(())
    }
}

impl Default for PcieConfig {
    fn default() -> Self {
        Self::gen3_x16()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn err(c: &PcieConfig) -> String {
        match c.validate() {
            Err(Error::Config(e)) => e.to_string(),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn presets_are_valid() {
        for c in [PcieConfig::gen3_x16(), PcieConfig::gen3_x8(), PcieConfig::gen2_x8(), PcieConfig::gen4_x16()] {
            c.validate().unwrap();
        }
        assert_eq!(PcieConfig::gen3_x8().lanes, 8);
        assert_eq!(PcieConfig::gen3_x8().mps_bytes, 256);
    }

    #[test]
    fn errors_name_the_field_value_and_choices() {
        let c = PcieConfig { mps_bytes: 100, ..PcieConfig::gen3_x16() };
        assert_eq!(err(&c), r#"pcie.mps_bytes: invalid value '100' (allowed: one of 128, 256, 512, 1024, 2048, 4096)"#);
        let c = PcieConfig { mrrs_bytes: 64, ..PcieConfig::gen3_x16() };
        assert!(err(&c).starts_with(r#"pcie.mrrs_bytes: invalid value '64'"#));
        let c = PcieConfig { rcb_bytes: 32, ..PcieConfig::gen3_x16() };
        assert_eq!(err(&c), r#"pcie.rcb_bytes: invalid value '32' (allowed: one of 64, 128, 256, 512)"#);
        let c = PcieConfig { gen: 7, ..PcieConfig::gen3_x16() };
        assert_eq!(err(&c), r#"pcie.gen: invalid value '7' (allowed: 1 to 6)"#);
        let c = PcieConfig { lanes: 12, ..PcieConfig::gen3_x16() };
        assert_eq!(err(&c), r#"pcie.lanes: invalid value '12' (allowed: one of 1, 2, 4, 8, 16)"#);
        let c = PcieConfig { read_tags: 0, ..PcieConfig::gen3_x16() };
        assert_eq!(err(&c), r#"pcie.read_tags: invalid value '0' (allowed: 1 to 1023)"#);
        let c = PcieConfig { latency_ps: 2_000_000_000, ..PcieConfig::gen3_x16() };
        assert!(err(&c).starts_with("pcie.latency_ps: "));
    }

    #[test]
    fn json_round_trip_and_unknown_fields_rejected() {
        let c = PcieConfig::gen4_x16();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<PcieConfig>(&text).unwrap(), c);
        // cpl_split_at_rcb may be omitted.
        let v: serde_json::Value = serde_json::json!({
            "gen": 3, "lanes": 8, "mps_bytes": 256, "mrrs_bytes": 512, "rcb_bytes": 64,
            "latency_ps": 200000, "read_tags": 32, "addr64": true
        });
        let c: PcieConfig = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c, PcieConfig::gen3_x8());
        let mut bad = v;
        bad["mps"] = 256.into();
        assert!(serde_json::from_value::<PcieConfig>(bad).unwrap_err().to_string().contains("unknown field `mps`"));
    }
}
