#![no_main]
// The pcap/pcapng reader on arbitrary files (hostsim_core::fuzz::pcap).
use std::path::PathBuf;
use std::sync::OnceLock;

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let scratch = SCRATCH.get_or_init(|| std::env::temp_dir().join(format!("hostsim-fuzz-pcap-{}", std::process::id())));
    hostsim_core::fuzz::pcap(data, scratch);
});
