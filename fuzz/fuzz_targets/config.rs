#![no_main]
// The config contract on arbitrary text (hostsim_core::fuzz::config).
libfuzzer_sys::fuzz_target!(|data: &[u8]| hostsim_core::fuzz::config(data));
