//! A memcached-compatible key-value store: the functional core of the
//! memcached benchmark (SPEC 2.9), independent of the stack it runs on.
//!
//! * [`table`] — a fixed-size chained hash table over a preallocated item
//!   arena, every bucket and item at a simulated address; each operation
//!   reports the cache lines it touches to a [`LineSink`].
//! * [`store`] — the ASCII protocol over UDP: [`Store::handle_datagram`] takes
//!   a request's UDP payload and writes the response datagrams memcached 1.6
//!   would send (checked against a real `memcached -U` by
//!   `tests/memcached_peer.rs`).
//! * [`datagrams`] — the reusable output buffer of response datagrams.
//!
//! Read memcached's `doc/protocol.txt` first; `wire::memcached` holds the
//! frame header and the command-line parser.

pub mod datagrams;
pub mod store;
pub mod table;

pub use datagrams::Datagrams;
pub use store::{Stats, Store, StoreConfig, ValueLimit};
pub use table::{Table, TableConfig};

use crate::cpu::Work;

/// Receives the memory a store operation touches, as byte ranges at simulated addresses.
pub trait LineSink {
    fn read(&mut self, addr: u64, len_bytes: u64);
    fn write(&mut self, addr: u64, len_bytes: u64);
}

/// Ignores every access.
impl LineSink for () {
    fn read(&mut self, _: u64, _: u64) {}
    fn write(&mut self, _: u64, _: u64) {}
}

/// Appends the address of each 64 B line touched (reads and writes alike), in order.
impl LineSink for Vec<u64> {
    fn read(&mut self, addr: u64, len_bytes: u64) {
        self.extend(crate::mem::lines(addr, len_bytes))
    }
    fn write(&mut self, addr: u64, len_bytes: u64) {
        self.extend(crate::mem::lines(addr, len_bytes))
    }
}


/// One access per line into the work unit, with no instructions (the
/// deployment charges the store's instructions itself).
impl LineSink for Work {
    fn read(&mut self, addr: u64, len_bytes: u64) {
        self.read_lines(addr, len_bytes, 0);
    }
    fn write(&mut self, addr: u64, len_bytes: u64) {
        self.write_lines(addr, len_bytes, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Category;

    #[test]
    fn sinks_split_into_lines() {
        let mut v: Vec<u64> = Vec::new();
        v.read(60, 8);
        v.write(128, 0);
        assert_eq!(v, vec![0, 64]);
        let mut w = Work::new(Category::App);
        LineSink::read(&mut w, 60, 8);
        LineSink::write(&mut w, 128, 65);
        let a: Vec<(u64, bool)> = w.accesses().iter().map(|a| (a.addr, a.write)).collect();
        assert_eq!(a, vec![(0, false), (64, false), (128, true), (192, true)]);
    }
}
