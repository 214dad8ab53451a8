#![no_main]
// Every wire parser on arbitrary bytes (hostsim_core::fuzz::wire).
libfuzzer_sys::fuzz_target!(|data: &[u8]| hostsim_core::fuzz::wire(data));
