//! Device (DMA) accesses and direct cache access — Intel's DDIO.
//!
//! A device write of a line that is in the LLC updates it in place; one that
//! is not is allocated into the LLC, but only into the DCA ways (a way mask
//! on the fill, the highest-numbered ways, as the IIO LLC WAYS register does).
//! Either way stale copies in the cores' private caches are invalidated; a
//! line one of them held is allocated into `dca.held_ways` (the
//! lowest-numbered ways) when that is set, Skylake-SP's second I/O region.
//! Without DCA, device writes go to DRAM (using its write bandwidth) and
//! invalidate every cached copy. A device read is served by a core's dirty
//! copy if there is one, else by the LLC if the line is there (no allocation
//! on a miss), else by DRAM. The write returns when the data is globally
//! visible: an LLC access, or a DRAM write after queueing.
//!
//! Every device-written line is tagged "unread" in the LLC until a core
//! touches it; evicting such a line is a DCA leak ("leaky DMA"): the receive
//! ring's buffers outgrew the DCA ways and packets go to DRAM before the core
//! reads them.
//!
//! A device write that covers only part of a line (a frame's last line, a
//! 16 B descriptor write-back) must merge with the rest of the line: Intel's
//! uncore issues it as its own request type (`ItoMCacheNear`, "a partial
//! write request", against `ItoM` for a full line: the Skylake-SP/Cascade
//! Lake uncore event list, `UNC_CHA_TOR_INSERTS.IO_*_ITOMCACHENEAR`), and
//! the optimization manual (Intel 64 and IA-32 Architectures Optimization
//! Reference Manual, "Maximizing PCIe Performance") warns that partial
//! writes delay later requests. Here the merge takes the line from a core's
//! dirty copy (a coherence transfer), from the LLC (no extra cost), or else
//! reads it from DRAM first (read-modify-write), and only then completes.
//! Simplified: the device sees the LLC with core 0's latency. Read first: params.md §3
//! (ddio-bench), Farshin et al., "Reexamining Direct Cache Access to
//! Optimize I/O Intensive Applications for Multi-hundred-gigabit Networks"
//! (ATC'20), and Tootoonchian et al., ResQ (NSDI'18).

use crate::engine::time::Ps;

use super::cache::{flag, lines, LINE_BYTES};
use super::dram::{Agent, Read};
use super::hierarchy::MemSystem;

/// Flags of a line the device has just written.
const DEVICE_WRITTEN: u8 = flag::DIRTY | flag::DEV_DIRTY | flag::DEV_UNREAD;

impl MemSystem {
    /// A NIC writes `len` bytes at `addr` at `now`; returns when the
    /// last line is globally visible.
    pub fn device_write(&mut self, addr: u64, len: u32, now: Ps) -> Ps {
        self.device_write_by(Agent::Device, addr, len, now)
    }

    /// A NIC reads `len` bytes at `addr` at `now`; returns when the last line has arrived.
    pub fn device_read(&mut self, addr: u64, len: u32, now: Ps) -> Ps {
        self.device_read_by(Agent::Device, addr, len, now)
    }

    /// A device write by `agent` (a NIC or the copy engine, which write
    /// through DCA alike); see [`MemSystem::device_write`].
    pub fn device_write_by(&mut self, agent: Agent, addr: u64, len: u32, now: Ps) -> Ps {
        let mut done = now;
        let written = DEVICE_WRITTEN | if agent == Agent::Engine { flag::ENGINE } else { 0 };
        let end = addr + len as u64;
        for line in lines(addr, len as u64) {
            self.c.traffic[agent.index()].write_bytes += LINE_BYTES;
            let (held, core_dirty) = self.snoop(None, line, true);
            let partial = line < addr || line + LINE_BYTES > end;
            // One LLC lookup serves the merge and the write (without DCA, a
            // full line needs none: it only invalidates).
            let slot = if self.dca_enabled || partial { self.llc.lookup(line) } else { None };
            // When the rest of the line is at hand for the merge.
            let merged = if !partial {
                now
            } else {
                self.c.partial_writes += 1;
                self.merge_source(agent, line, core_dirty, slot.is_some(), now)
            };
            let t = if !self.dca_enabled {
                self.llc.invalidate(line);
                // Booked at `now` like every device transfer; the merge's wait adds to its latency.
                merged + self.dram.write(line, now, agent)
            } else if let Some(s) = slot {
                self.c.llc.device_hits += 1;
                self.c.dca_updates += 1;
                let f = self.llc.flags(s);
                self.llc.set_flags(s, (f & !flag::ENGINE) | written);
                merged + self.device_llc_ps
            } else {
                self.c.llc.device_misses += 1;
                self.c.dca_allocs += 1;
                self.c.dca_held_writes += held as u64;
                let mask = if held { self.dca_held_mask } else { self.dca_mask };
                self.llc_fill(line, written, mask, now);
                merged + self.device_llc_ps
            };
            done = done.max(t);
        }
        done
    }

    /// A device read by `agent`; see [`MemSystem::device_read`].
    pub fn device_read_by(&mut self, agent: Agent, addr: u64, len: u32, now: Ps) -> Ps {
        let mut done = now;
        for line in lines(addr, len as u64) {
            self.c.traffic[agent.index()].read_bytes += LINE_BYTES;
            let t = if self.dirty_in_a_core(line) {
                self.c.coherence_transfers += 1;
                now + self.device_transfer_ps
            } else if self.llc.lookup(line).is_some() {
                self.c.llc.device_hits += 1;
                now + self.device_llc_ps
            } else {
                self.c.llc.device_misses += 1;
                if self.defer {
                    match self.dram.read_later(line, now, agent) {
                        Read::Done(latency) => now + latency,
                        Read::Queued(t) => {
                            self.deferred.push(t);
                            now
                        }
                    }
                } else {
                    now + self.dram.read(line, now, agent)
                }
            };
            done = done.max(t);
        }
        done
    }

    /// When the unwritten part of a partially written `line` is at hand:
    /// taken from the core that held it dirty, found in the LLC, or read
    /// from DRAM on `agent`'s behalf (counted in `partial_write_reads` and
    /// the DRAM's bytes read for `agent`, not in `traffic`, which counts
    /// the lines the agent itself moves).
    fn merge_source(&mut self, agent: Agent, line: u64, core_dirty: bool, in_llc: bool, now: Ps) -> Ps {
        if core_dirty {
            self.c.coherence_transfers += 1;
            now + self.device_transfer_ps
        } else if in_llc {
            now
        } else {
            self.c.partial_write_reads += 1;
            now + self.dram.read(line, now, agent)
        }
    }

    fn dirty_in_a_core(&self, addr: u64) -> bool {
        let (at1, at2) = (self.l1[0].locate(addr), self.l2[0].locate(addr));
        let dirty = |c: &super::cache::Cache, at| c.find_located(at).is_some_and(|s| c.flags(s) & flag::DIRTY != 0);
        let holders = self.filter.holders(addr);
        (0..self.l1.len()).any(|o| holders[o] != 0 && (dirty(&self.l1[o], at1) || dirty(&self.l2[o], at2)))
    }
}

#[cfg(test)]
mod tests {
    use crate::mem::config::{CleanVictims, CoreRead, Inclusion, MemConfig};
    use crate::mem::hierarchy::tests::{sys, tiny};
    use crate::mem::hierarchy::{Level, MemSystem};
    use crate::mem::lines;
    use crate::mem::dram::Agent;

    fn no_dca(inclusion: Inclusion) -> MemConfig {
        let mut c = tiny(inclusion);
        c.llc.dca.enabled = false;
        c
    }

    #[test]
    fn device_write_then_core_read_hits_the_llc() {
        for inclusion in [Inclusion::Inclusive, Inclusion::NonInclusive] {
            let mut m = sys(&tiny(inclusion), 1);
            // 24 full lines, visible after one LLC access (30 ns).
            assert_eq!(m.device_write(0x8000, 1536, 1_000), 31_000);
            assert_eq!(m.counters().dca_allocs, 24);
            for a in lines(0x8000, 1536) {
                assert_eq!(m.core_access(0, a, false, 0).level, Level::Llc);
            }
            assert_eq!(m.counters().llc.hits, 24);
            let d = *m.dram().counters();
            assert_eq!((d.bytes_read_core, d.bytes_written_device), (0, 0));
        }
    }

    #[test]
    fn without_dca_device_writes_go_to_dram() {
        let mut m = sys(&no_dca(Inclusion::Inclusive), 1);
        // One channel at 1 line/ns, 50 ns idle: the 24th line waits 23 ns.
        assert_eq!(m.device_write(0x8000, 1536, 0), 50_000 + 23_000);
        assert_eq!(m.dram().counters().bytes_written_device, 24 * 64);
        assert_eq!(m.counters().dca_allocs, 0);
        assert!(!m.llc_contains(0x8000));
        assert_eq!(m.core_access(0, 0x8000, false, 100_000).level, Level::Dram);
        assert_eq!(m.dram().counters().bytes_read_core, 64);
    }

    /// Acceptance 5 in miniature: without DCA, a stream of 1536 B device writes
    /// is DRAM-bound, and 1 → 2 → 4 channels halve the time each step.
    #[test]
    fn without_dca_channels_set_the_write_ceiling() {
        let times: Vec<u64> = [1u32, 2, 4]
            .iter()
            .map(|&ch| {
                let mut cfg = no_dca(Inclusion::NonInclusive);
                cfg.dram.channels = ch;
                let mut m = sys(&cfg, 1);
                // 256 frames offered at once: 6144 lines, 6.144 µs of one channel.
                (0..256u64).map(|i| m.device_write(i * 2048, 1536, 0)).max().unwrap() - 50_000
            })
            .collect();
        assert_eq!(times, vec![6_143_000, 3_071_000, 1_535_000]);
    }

    #[test]
    fn device_write_updates_in_place_and_invalidates_core_copies() {
        for dca in [true, false] {
            let mut cfg = tiny(Inclusion::Inclusive);
            cfg.llc.dca.enabled = dca;
            let mut m = sys(&cfg, 2);
            m.core_access(0, 0x40, true, 0);
            m.core_access(1, 0x40, false, 0);
            m.device_write(0x40, 64, 0);
            assert!(!m.core_holds(0, 0x40) && !m.core_holds(1, 0x40), "stale copies dropped");
            if dca {
                assert_eq!((m.counters().dca_updates, m.counters().dca_allocs), (1, 0));
                assert_eq!(m.core_access(0, 0x40, false, 0).level, Level::Llc);
            } else {
                assert!(!m.llc_contains(0x40));
                assert_eq!(m.core_access(0, 0x40, false, 0).level, Level::Dram);
            }
        }
    }

    /// The tiny LLC has 32 sets × 2 DCA ways × 64 B = 4 KiB of DCA capacity.
    /// A backlogged ring: the device writes every buffer before the core reads any.
    #[test]
    fn a_ring_larger_than_the_dca_ways_leaks() {
        for inclusion in [Inclusion::Inclusive, Inclusion::NonInclusive] {
            for (bytes, leaks) in [(2048u64, 0u64), (4096, 0), (8192, 64)] {
                let mut m = sys(&tiny(inclusion), 1);
                for a in (0..bytes).step_by(64) {
                    m.device_write(0x10_0000 + a, 64, 0);
                }
                let from_dram = (0..bytes)
                    .step_by(64)
                    .filter(|a| m.core_access(0, 0x10_0000 + a, false, 1_000_000).level == Level::Dram)
                    .count() as u64;
                // Fills use the DCA ways only: the first half of an 8 KiB ring was
                // evicted unread (written back as device bytes) and is read from DRAM.
                assert_eq!(m.counters().dca_leaks, leaks, "{bytes} B ring");
                assert_eq!(from_dram, leaks);
                let d = m.dram().counters();
                assert_eq!((d.bytes_written_device, d.bytes_read_core), (leaks * 64, leaks * 64));
                assert_eq!(m.counters().dca_allocs, bytes / 64);
            }
        }
    }

    /// In a non-inclusive LLC, lines the core has read come back from L2 into
    /// ordinary ways, so the device later updates them in place instead of
    /// allocating: the ring spreads beyond the DCA ways.
    #[test]
    fn non_inclusive_llc_keeps_read_buffers_beyond_the_dca_ways() {
        let mut m = sys(&tiny(Inclusion::NonInclusive), 1);
        for _ in 0..3 {
            for a in (0..8192u64).step_by(64) {
                m.device_write(a, 64, 0);
            }
            for a in (0..8192u64).step_by(64) {
                m.core_access(0, a, false, 0);
            }
        }
        assert!(m.counters().llc_victim_fills > 0);
        assert!(m.counters().dca_updates > 0);
    }

    /// Acceptance 7 in miniature, on `altra`'s caches: 1024 frames of 1518 B
    /// arrive back to back (DCA on, non-inclusive LLC); the core reads each
    /// frame, rewrites its header line, and the device reads it for TX; the
    /// buffers go back to a LIFO pool. With bursts of 32 the same few buffers
    /// cycle, the device's writes invalidate the dirty copies, and nothing is
    /// written back. With bursts of 1024 the touched frames (1.5 MiB) outgrow
    /// the 1 MiB L2 before they are sent:
    /// * `copy`: the L2 writes its dirty header lines back; the LLC still
    ///   holds them (DCA ways), so they are updates, not new fills: half of
    ///   the 1024.
    /// * `move`: every line the core read left the LLC dirty. The 24 lines of
    ///   each 2 KiB buffer use 24 of every 32 L2 sets (1536 of 2048), and
    ///   the 24,576 lines put 16 in each of those 8-way sets: 8 × 1536 =
    ///   12,288 go back to the LLC as victims.
    #[test]
    fn big_bursts_cause_more_llc_writebacks() {
        let run = |mode: CoreRead, burst: usize| {
            let mut cfg = MemConfig::altra();
            cfg.llc.on_core_read = mode;
            let mut m = MemSystem::new(&cfg, 1, &[333]).unwrap();
            let mut pool: Vec<u64> = (0..2048u64).rev().map(|i| 0x1000_0000 + i * 2048).collect();
            let mut t = 0;
            for _ in 0..1024 / burst {
                let bufs: Vec<u64> = (0..burst).map(|_| pool.pop().unwrap()).collect();
                for &b in &bufs {
                    t = m.device_write(b, 1518, t);
                }
                for &b in &bufs {
                    for a in lines(b, 1518) {
                        m.core_access(0, a, false, t);
                    }
                    m.core_access(0, b, true, t);
                }
                for &b in &bufs {
                    t = m.device_read(b, 1518, t);
                }
                pool.extend(bufs.iter().rev());
            }
            let c = m.counters();
            (c.l2[0].writebacks, c.llc_victim_fills)
        };
        for mode in [CoreRead::Copy, CoreRead::Move] {
            assert_eq!(run(mode, 32), (0, 0), "{mode:?}");
        }
        assert_eq!(run(CoreRead::Copy, 1024), (512, 0));
        assert_eq!(run(CoreRead::Move, 1024), (12_288, 12_288));
    }

    #[test]
    fn more_dca_ways_stop_the_leak() {
        let run = |ways: u32| {
            let mut cfg = tiny(Inclusion::NonInclusive);
            cfg.llc.dca.ways = ways;
            let mut m = sys(&cfg, 1);
            for a in (0..8192u64).step_by(64) {
                m.device_write(a, 64, 0);
            }
            m.counters().dca_leaks
        };
        assert_eq!([run(2), run(4), run(8)], [64, 0, 0]);
    }

    #[test]
    fn device_reads_do_not_allocate() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        assert_eq!(m.device_read(0x40, 64, 0), 50_000);
        assert!(!m.llc_contains(0x40));
        assert_eq!(m.dram().counters().bytes_read_device, 64);
        m.core_access(0, 0x80, false, 0); // now in the LLC (inclusive), clean
        assert_eq!(m.device_read(0x80, 64, 0), 30_000);
        assert_eq!((m.counters().llc.device_hits, m.counters().llc.device_misses), (1, 1));
        // A core's dirty copy supplies the data.
        m.core_access(0, 0xc0, true, 0);
        assert_eq!(m.device_read(0xc0, 64, 0), 60_000);
        assert_eq!(m.counters().coherence_transfers, 1);
    }

    #[test]
    fn leaked_device_lines_are_written_back_as_device_bytes() {
        let mut m = sys(&tiny(Inclusion::Inclusive), 1);
        // 3 device lines into one LLC set with 2 DCA ways: the first is evicted unread.
        for i in 0..3u64 {
            m.device_write(i * 2048, 64, 0);
        }
        assert_eq!(m.counters().dca_leaks, 1);
        assert_eq!(m.dram().counters().bytes_written_device, 64);
        assert_eq!(m.dram().counters().bytes_written_core, 0);
    }

    /// A frame's last line and a descriptor write-back cover part of a line:
    /// with DCA, one whose line is absent reads it from DRAM before the
    /// merge (50 ns, then the 30 ns LLC access); a full line does not.
    #[test]
    fn a_partial_line_absent_from_the_llc_is_read_before_the_merge() {
        let mut m = sys(&tiny(Inclusion::NonInclusive), 1);
        assert_eq!(m.device_write(0x8000, 64, 1_000), 31_000);
        assert_eq!(m.device_write(0x9000, 60, 1_000), 81_000);
        // 1518 B: 23 full lines and 46 B of a 24th.
        m.device_write(0xa000, 1518, 100_000);
        let c = m.counters();
        assert_eq!((c.partial_writes, c.partial_write_reads), (2, 2));
        assert_eq!(m.dram().counters().bytes_read_device, 2 * 64);
        assert_eq!(c.traffic[Agent::Device.index()].read_bytes, 0);
        // A 16 B write-back into a line the LLC holds merges there: no read.
        assert_eq!(m.device_write(0xa010, 16, 200_000), 230_000);
        assert_eq!((m.counters().partial_writes, m.counters().partial_write_reads), (3, 2));
    }

    /// The unwritten bytes of a line a core holds dirty come from that core
    /// (a 60 ns transfer), not from the LLC or DRAM.
    #[test]
    fn a_partial_write_merges_with_a_cores_dirty_copy() {
        let mut m = sys(&tiny(Inclusion::NonInclusive), 1);
        m.core_access(0, 0x8000, true, 0);
        assert_eq!(m.device_write(0x8000, 16, 1_000_000), 1_000_000 + 60_000 + 30_000);
        let c = m.counters();
        assert_eq!((c.partial_writes, c.partial_write_reads, c.coherence_transfers), (1, 0, 1));
        assert_eq!(m.dram().counters().bytes_read_device, 0);
    }

    /// Without DCA, a partial write to a line no cache holds is a read
    /// then a write in DRAM (50 ns, then 50 ns after the read's 1 ns on the
    /// channel); a full line only the write.
    #[test]
    fn without_dca_a_partial_line_is_read_modify_write_in_dram() {
        let mut m = sys(&no_dca(Inclusion::Inclusive), 1);
        assert_eq!(m.device_write(0x8000, 64, 0), 50_000);
        assert_eq!(m.device_write(0x9000, 16, 1_000_000), 1_101_000);
        let d = *m.dram().counters();
        assert_eq!((d.bytes_read_device, d.bytes_written_device), (64, 128));
    }

    fn moving(mode: CoreRead) -> MemConfig {
        let mut c = tiny(Inclusion::NonInclusive);
        c.llc.on_core_read = mode;
        c
    }

    /// `move`: a core's read takes a device-written line out of the LLC into
    /// its L2, dirty; the line comes back to the LLC (outside the DCA ways'
    /// accounting) only as an L2 victim. `copy` leaves it in its DCA way.
    #[test]
    fn a_core_read_moves_a_device_written_line_to_its_l2() {
        for mode in [CoreRead::Copy, CoreRead::Move] {
            let mut m = sys(&moving(mode), 1);
            m.device_write(0, 64, 0);
            assert_eq!(m.core_access(0, 0, false, 1_000_000).level, Level::Llc);
            assert_eq!(m.llc_contains(0), mode == CoreRead::Copy, "{mode:?}");
            assert_eq!(m.counters().llc_moves, (mode == CoreRead::Move) as u64);
            // Four more lines of L2 set 0 evict it: dirty only if it moved.
            for i in 1..=4 {
                m.core_access(0, i * 1024, false, 2_000_000);
            }
            let c = m.counters();
            assert_eq!(c.l2[0].writebacks, (mode == CoreRead::Move) as u64, "{mode:?}");
            assert_eq!(c.llc_victim_fills, (mode == CoreRead::Move) as u64, "{mode:?}");
            assert!(m.llc_contains(0) && c.dca_leaks == 0);
        }
    }

    /// The DCA ways (2 of 8, 64 lines) full of written lines, half of them
    /// then read, then 32 more written: with `copy` the read lines stay and
    /// were touched last, so the 32 unread ones are evicted (leaky DMA); with
    /// `move` the read lines left and the new ones take their ways.
    #[test]
    fn moved_lines_free_their_dca_ways() {
        for (mode, leaks) in [(CoreRead::Copy, 32), (CoreRead::Move, 0)] {
            let mut m = sys(&moving(mode), 1);
            m.device_write(0, 64 * 64, 0);
            for line in lines(0, 32 * 64) {
                m.core_access(0, line, false, 1_000_000);
            }
            m.device_write(64 * 64, 32 * 64, 2_000_000);
            assert_eq!(m.counters().dca_leaks, leaks, "{mode:?}");
        }
    }

    /// A clean line only another core holds is forwarded from it under
    /// `move` (a 60 ns transfer) rather than read from DRAM (50 ns idle). A
    /// device-written line one core read is, under `move`, only in that
    /// core's L2, dirty: a second core's read takes it from there (a
    /// transfer) and the LLC stays without it; under `copy` the first core's
    /// copy is clean, the LLC serves the second (30 ns) and keeps the line.
    #[test]
    fn clean_private_lines_are_forwarded_and_moved_lines_shared_by_transfer() {
        for mode in [CoreRead::Copy, CoreRead::Move] {
            let moving_mode = mode == CoreRead::Move;
            let mut m = sys(&moving(mode), 2);
            assert_eq!(m.core_access(0, 0, false, 0).level, Level::Dram);
            let a = m.core_access(1, 0, false, 1_000_000);
            let expect = if moving_mode { (Level::Llc, 60_000) } else { (Level::Dram, 50_000) };
            assert_eq!((a.level, a.latency_ps), expect, "{mode:?}");
            assert_eq!(m.counters().coherence_transfers, moving_mode as u64);

            m.device_write(0x8000, 64, 2_000_000);
            m.core_access(0, 0x8000, false, 3_000_000);
            let b = m.core_access(1, 0x8000, false, 4_000_000);
            assert_eq!(b.latency_ps, if moving_mode { 60_000 } else { 30_000 }, "{mode:?}");
            assert_eq!(m.llc_contains(0x8000), !moving_mode, "{mode:?}");
            assert_eq!(m.counters().coherence_transfers, 2 * moving_mode as u64);
            assert!(m.core_holds(0, 0x8000) && m.core_holds(1, 0x8000));
        }
    }

    /// A device write to a line only a core's L2 held (a non-inclusive LLC
    /// lacks it) allocates into `held_ways`, outside the DCA ways: with 0 it
    /// displaces one of the two unread lines in its set's DCA ways.
    #[test]
    fn a_device_write_to_a_held_line_allocates_in_the_held_ways() {
        const SET_STRIDE: u64 = 2048; // 32 LLC sets of 64 B
        for (held_ways, leaks) in [(0, 1), (2, 0)] {
            let mut c = moving(CoreRead::Move);
            c.llc.dca.held_ways = held_ways;
            let mut m = sys(&c, 1);
            m.core_access(0, 0, false, 0);
            assert!(!m.llc_contains(0), "a DRAM fill bypasses a non-inclusive LLC");
            m.device_write(SET_STRIDE, 64, 1_000_000);
            m.device_write(2 * SET_STRIDE, 64, 1_000_000);
            m.device_write(0, 64, 2_000_000);
            assert!(!m.core_holds(0, 0) && m.llc_contains(0));
            assert_eq!(m.counters().dca_leaks, leaks, "held_ways {held_ways}");
            // Three allocations, one of them for the held line: a hit as the uncore counts one.
            let k = m.counters();
            assert_eq!((k.dca_allocs, k.dca_held_writes, k.dca_updates), (3, 1, 0));
            assert_eq!(m.result_json()["dca_write_hit_rate"].as_f64().unwrap(), 1.0 / 3.0);
        }
    }

    /// `migrate` (A4's reading): a core's read of a line in a DCA way (6 or
    /// 7 of 8) puts it in the inclusive ways (0 and 1, `held_ways` 2) and a
    /// clean copy in the L2; the DCA way is free for the next write, so the
    /// refill leaks nothing, as under `move`. A line in an ordinary way (an
    /// L2 victim) is moved to the reader's L2, as under `move`.
    #[test]
    fn a_core_read_migrates_a_dca_line_to_the_inclusive_ways() {
        let mut c = moving(CoreRead::Migrate);
        c.llc.dca.held_ways = 2;
        let mut m = sys(&c, 1);
        m.device_write(0, 64, 0);
        assert!(m.llc_way(0).is_some_and(|w| w >= 6));
        assert_eq!(m.core_access(0, 0, false, 1_000_000).level, Level::Llc);
        assert!(m.llc_way(0).is_some_and(|w| w < 2), "{:?}", m.llc_way(0));
        assert!(m.core_holds(0, 0));
        assert_eq!((m.counters().llc_migrations, m.counters().llc_moves), (1, 0));
        // The L2 copy is clean (the LLC keeps the device's data): evicted by
        // five more lines of its L2 set, it is no write-back.
        for i in 1..=5 {
            m.core_access(0, i * 1024, false, 2_000_000);
        }
        assert_eq!(m.counters().l2[0].writebacks, 0);
        // The second victim, line 1024, went into an ordinary way of the
        // LLC: a read moves it.
        assert_eq!(m.llc_way(1024), Some(0));
        m.core_access(0, 1024, false, 3_000_000);
        assert_eq!((m.counters().llc_migrations, m.counters().llc_moves), (1, 1));
        assert!(!m.llc_contains(1024));

        let mut m = sys(&c, 1);
        m.device_write(0, 64 * 64, 0);
        for line in lines(0, 32 * 64) {
            m.core_access(0, line, false, 1_000_000);
        }
        m.device_write(64 * 64, 32 * 64, 2_000_000);
        assert_eq!(m.counters().dca_leaks, 0);
        assert_eq!(m.counters().llc_migrations, 32);
    }

    /// `clean_victims = drop`: a clean L2 victim is not written into the
    /// non-inclusive LLC (counted as dropped); a dirty one still is.
    #[test]
    fn dropped_clean_victims_stay_out_of_the_llc() {
        for (clean, store) in [(CleanVictims::Fill, false), (CleanVictims::Drop, false), (CleanVictims::Drop, true)] {
            let mut c = moving(CoreRead::Move);
            c.llc.clean_victims = clean;
            let mut m = sys(&c, 1);
            m.core_access(0, 0, store, 0);
            // Lines of L1 and L2 set 0: the fourth evicts line 0 from both;
            // stored to, it went back to the L2 dirty, and the eighth evicts it.
            for i in 1..=8 {
                m.core_access(0, i * 1024, false, 1_000_000);
            }
            let kept = clean == CleanVictims::Fill || store;
            assert_eq!(m.llc_contains(0), kept, "{clean:?} store {store}");
            let c = m.counters();
            let dirty = c.l2[0].writebacks;
            assert_eq!(dirty, store as u64);
            // Every L2 victim (9 lines through 4 ways) is a victim fill or a drop.
            let victims = c.l2[0].evictions;
            assert!(victims >= 5, "{victims}");
            match clean {
                CleanVictims::Fill => assert_eq!((c.llc_victim_fills, c.llc_dropped_clean_victims), (victims, 0)),
                CleanVictims::Drop => assert_eq!((c.llc_victim_fills, c.llc_dropped_clean_victims), (dirty, victims - dirty)),
            }
        }
    }

    #[test]
    fn migrate_needs_inclusive_ways() {
        let mut c = moving(CoreRead::Migrate);
        c.llc.dca.held_ways = 0;
        let e = MemSystem::new(&c, 1, &[1_000]).err().expect("rejected").to_string();
        assert!(e.contains("mem.llc.dca.held_ways") && e.contains("migrate"), "{e}");
        c.llc.dca.held_ways = 2;
        c.llc.inclusion = Inclusion::Inclusive;
        let e = MemSystem::new(&c, 1, &[1_000]).err().expect("rejected").to_string();
        assert!(e.contains("mem.llc.on_core_read") && e.contains("migrate"), "{e}");
    }

    #[test]
    fn move_needs_a_non_inclusive_llc() {
        let mut c = tiny(Inclusion::Inclusive);
        c.llc.on_core_read = CoreRead::Move;
        let e = MemSystem::new(&c, 1, &[1_000]).err().expect("rejected").to_string();
        assert!(e.contains("mem.llc.on_core_read") && e.contains("non_inclusive"), "{e}");
    }
}
