//! A bounded fuzzing smoke run on stable Rust (the long campaigns use
//! cargo-fuzz: see `fuzz/README.md`). Each target gets valid seeds mutated
//! by byte flips, truncations, insertions and splices; none may panic, and
//! none may take long (a hang). Inputs tried are printed.

use std::time::{Duration, Instant};

use hostsim_core::config::SimConfig;
use hostsim_core::fuzz;
use hostsim_core::host::HostConfig;

/// Inputs per target; `HOSTSIM_FUZZ_INPUTS` raises it.
fn budget(default: usize) -> usize {
    std::env::var("HOSTSIM_FUZZ_INPUTS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// xorshift64*: deterministic mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] = [0, 0xff, 0x7f, 0x80, b'9', b'"'][rng.below(6)];
            }
            2 => d.truncate(rng.below(d.len() + 1)),
            3 => {
                let i = rng.below(d.len() + 1);
                let n = 1 + rng.below(16);
                let b = rng.next() as u8;
                d.splice(i..i, std::iter::repeat_n(b, n));
            }
            4 if d.len() > 8 => {
                // Copy a slice over another place (splices structure into itself).
                let (a, b) = (rng.below(d.len()), rng.below(d.len()));
                let n = rng.below(d.len() - a.max(b)).min(64);
                let chunk = d[a..a + n].to_vec();
                d[b..b + n].copy_from_slice(&chunk);
            }
            _ => {
                let i = rng.below(d.len() + 1);
                d.insert(i, rng.next() as u8);
            }
        }
    }
    d
}

/// Runs `target` on `n` mutated inputs; returns how many and the slowest.
fn campaign(name: &str, seeds: &[Vec<u8>], n: usize, target: impl Fn(&[u8])) -> (usize, Duration) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
    let mut slowest = Duration::ZERO;
    for s in seeds {
        target(s);
    }
    for _ in 0..n {
        let d = mutate(&mut rng, seeds);
        let t = Instant::now();
        target(&d);
        let took = t.elapsed();
        assert!(took < Duration::from_secs(5), "{name}: an input took {took:?} (a hang): {d:?}");
        slowest = slowest.max(took);
    }
    println!("fuzz smoke {name}: {} inputs, 0 panics, slowest {slowest:?}", n + seeds.len());
    (n, slowest)
}

fn frame_seeds() -> Vec<Vec<u8>> {
    // Ethernet / IPv4 / UDP to 11211 / memcached header / "get k\r\n", and a TCP segment.
    let mut udp = hex("0200000000020200000000010800450000250000000040110000c0a80001c0a80002040002bb00110000");
    udp.extend_from_slice(&[0, 1, 0, 0, 0, 1, 0, 0]);
    udp.extend_from_slice(b"get k\r\n");
    let mut tcp = hex("0200000000020200000000010800450000280000000040060000c0a80001c0a800021451000100000001000000015010ffff00000000");
    tcp.resize(64, 0);
    vec![udp, tcp]
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn pcap_seeds() -> Vec<Vec<u8>> {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    let mut out = Vec::new();
    {
        let mut w = PcapWriter::new(&mut out).unwrap();
        for (i, f) in frame_seeds().iter().enumerate() {
            let mut f = f.clone();
            f.resize(60, 0);
            w.write_packet(&PcapPacket::new(Duration::from_micros(i as u64), f.len() as u32, &f)).unwrap();
        }
    }
    // The last byte chooses the loader's options (see `fuzz::pcap`): none, all, some.
    [0u8, 0x0f, 0x1e, 0x7f].iter().map(|&f| [out.as_slice(), &[f]].concat()).collect()
}

fn config_seeds() -> Vec<Vec<u8>> {
    let mut reflector = SimConfig::default();
    reflector.sim.duration_ps = 10_000_000;
    reflector.sim.warmup_ps = 0;
    let mut host = reflector.clone();
    host.app = "testpmd".into();
    host.host = Some(HostConfig::preset("altra").unwrap());
    [reflector, host].iter().map(|c| serde_json::to_vec(c).unwrap()).collect()
}

#[test]
fn wire_parsers_never_panic() {
    campaign("wire", &frame_seeds(), budget(200_000), fuzz::wire);
}

#[test]
fn the_pcap_reader_never_panics() {
    campaign("pcap", &pcap_seeds(), budget(20_000), fuzz::pcap);
}

#[test]
fn config_parsing_never_panics() {
    for seed in config_seeds() {
        let c = SimConfig::from_json(std::str::from_utf8(&seed).unwrap()).expect("a seed is a valid contract");
        c.validate().expect("a seed validates");
    }
    campaign("config", &config_seeds(), budget(3_000), fuzz::config);
}

/// Every input of the committed, minimised cargo-fuzz corpora
/// (`fuzz/corpus/<target>`, see `fuzz/README.md`) on stable Rust: what the
/// campaigns found interesting stays free of panics and hangs.
#[test]
fn the_fuzz_corpora_replay_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let targets: [(&str, fn(&[u8])); 3] = [("wire", fuzz::wire), ("pcap", fuzz::pcap), ("config", fuzz::config)];
    for (name, target) in targets {
        let Ok(dir) = std::fs::read_dir(root.join(name)) else { panic!("no corpus for {name} in {}", root.display()) };
        let mut inputs: Vec<_> = dir.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{name}: the corpus is empty");
        let t = Instant::now();
        for p in &inputs {
            let data = std::fs::read(p).unwrap();
            let one = Instant::now();
            target(&data);
            assert!(one.elapsed() < Duration::from_secs(5), "{name}: {} took {:?} (a hang)", p.display(), one.elapsed());
        }
        println!("fuzz corpus {name}: {} inputs replayed in {:?}", inputs.len(), t.elapsed());
    }
}
