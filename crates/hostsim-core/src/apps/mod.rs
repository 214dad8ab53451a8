//! The benchmark applications (SPEC 2.9), one file each, and the registry
//! that names them. Each implements [`crate::stack::App`]: it acts on the
//! real frame bytes and charges its instructions and memory accesses to
//! the core that runs it.
//!
//! Adding an application is one file here (or anywhere: see
//! `tests/toy_app.rs`) and one line in [`Registry::builtin`] (or one
//! [`Registry::add`] call).

pub mod config;
mod l2fwd;
pub mod memcached;
mod rxptx;
mod testpmd;
mod touch;
mod udp_echo;
mod iperf;

pub use config::{AppConfig, ForwardMode, KvsAppConfig};

use crate::error::{ConfigError, Result};
use crate::stack::App;

/// Builds an application from the host's `app` section.
pub type Ctor = fn(&AppConfig) -> Result<Box<dyn App>>;

/// Which stacks an application runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stacks {
    pub pmd: bool,
    pub kernel: bool,
}

pub const PMD: Stacks = Stacks { pmd: true, kernel: false };
pub const KERNEL: Stacks = Stacks { pmd: false, kernel: true };
pub const BOTH: Stacks = Stacks { pmd: true, kernel: true };

/// A registered application.
#[derive(Clone)]
pub struct Entry {
    pub name: &'static str,
    pub stacks: Stacks,
    /// Largest frame it builds itself, FCS included (frame buffers must hold it).
    pub max_frame_bytes: fn(&AppConfig) -> u32,
    pub ctor: Ctor,
}

fn none(_: &AppConfig) -> u32 {
    0
}

/// The applications a host can run, by name.
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// Every application of the benchmark suite.
    pub fn builtin() -> Registry {
        let mut r = Registry { entries: Vec::new() };
        r.add("testpmd", PMD, testpmd::max_frame_bytes, testpmd::new);
        r.add("touchfwd", PMD, none, touch::new_fwd);
        r.add("touchdrop", PMD, none, touch::new_drop);
        r.add("rxptx", PMD, none, rxptx::new);
        r.add("l2fwd", PMD, none, l2fwd::new);
        r.add("udp-echo", BOTH, none, udp_echo::new);
        r.add("memcached", BOTH, memcached::max_frame_bytes, memcached::new);
        r.add("iperf", KERNEL, none, iperf::new);
        r
    }

    /// Registers an application (a later entry of the same name replaces the earlier).
    pub fn add(&mut self, name: &'static str, stacks: Stacks, max_frame_bytes: fn(&AppConfig) -> u32, ctor: Ctor) -> &mut Self {
        self.entries.retain(|e| e.name != name);
        self.entries.push(Entry { name, stacks, max_frame_bytes, ctor });
        self
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name).collect()
    }

    /// The entry for `name`, or an error naming the field `app` and the choices.
    pub fn lookup(&self, name: &str) -> Result<&Entry> {
        self.get(name).ok_or_else(|| ConfigError::new("app", name.to_string(), &format!("one of reflector, {}", self.names().join(", "))).into())
    }
}

/// Reads every byte of a frame: a word-wise XOR fold, so the bytes are really read.
#[inline]
pub fn touch(frame: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = frame.chunks_exact(8);
    for c in &mut chunks {
        acc ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    for &b in chunks.remainder() {
        acc = acc.rotate_left(8) ^ b as u64;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_builds_and_names_are_checked() {
        let r = Registry::builtin();
        for name in r.names() {
            let app = (r.get(name).unwrap().ctor)(&AppConfig::default()).unwrap();
            assert_eq!(app.name(), name);
        }
        let e = r.lookup("nope").err().unwrap().to_string();
        assert!(e.starts_with("app") && e.contains("testpmd"), "{e}");
        assert!(r.get("iperf").unwrap().stacks.kernel && !r.get("iperf").unwrap().stacks.pmd);
    }
}
