#![no_main]
// The pcap/pcapng reader on arbitrary files, with every loader option (hostsim_core::fuzz::pcap).
libfuzzer_sys::fuzz_target!(|data: &[u8]| hostsim_core::fuzz::pcap(data));
