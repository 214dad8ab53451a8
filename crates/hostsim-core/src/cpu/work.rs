//! A unit of work for a core: a [`Category`], a number of instructions, and
//! the memory accesses those instructions make, each at its position in the
//! instruction stream (how many of the work's instructions precede it).
//!
//! Positions matter to an out-of-order core: two misses can overlap only if
//! they are fewer than a ROB's worth of instructions apart. Build a work unit
//! in program order with [`Work::instr`], [`Work::read`], [`Work::write`] and
//! the per-line helpers; [`Work::reset`] clears it and keeps its buffer, so
//! one `Work` per component is reused for every packet without allocating.
//!
//! Accesses are per cache line: a loop reading eight words of a line is one
//! access (the other seven hit the line the first brought in, or merge into
//! its MSHR). The helpers issue one access per 64 B line touched.

use super::accounting::Category;

/// Cache-line size assumed by the per-line helpers (bytes; params.md §5: 64 B on x86 and N1).
pub const LINE_BYTES: u64 = 64;

/// One memory access of a work unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    pub write: bool,
    /// An atomic read-modify-write (compare-and-swap): it takes the line for
    /// writing and the core waits for it, as for a load, with no other miss
    /// overlapping it (a locked instruction orders the accesses around it).
    pub atomic: bool,
    /// A load whose address comes from the data of the loads before it
    /// (pointer chasing: a hash bucket, then the entry it points to): it
    /// issues only when their misses have returned, so it cannot overlap them.
    pub dependent: bool,
    /// Instructions of the work unit executed before this access.
    pub at_instr: u64,
}

/// The code a work unit executes: a contiguous region of instruction bytes
/// (a path's executed footprint), fetched through the core's L1I. `id`
/// names the region in the L1I's reuse tracking; one region per path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeRegion {
    pub id: u16,
    pub addr: u64,
    pub bytes: u32,
}

/// Where code lives: the kernel's text and the user programs' (above every
/// data address the model uses), 1 MiB per region.
const KERNEL_TEXT: u64 = 0xF000_0000_0000;
const USER_TEXT: u64 = 0xF100_0000_0000;

impl CodeRegion {
    /// Kernel code region `id` (1..=255) of `bytes`.
    pub const fn kernel(id: u16, bytes: u32) -> CodeRegion {
        CodeRegion { id, addr: KERNEL_TEXT + id as u64 * 0x10_0000, bytes }
    }

    /// User-space code region `id` (256..) of `bytes`: a driver, an application.
    pub const fn user(id: u16, bytes: u32) -> CodeRegion {
        CodeRegion { id, addr: USER_TEXT + id as u64 * 0x10_0000, bytes }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    category: Category,
    instructions: u64,
    accesses: Vec<Access>,
    code: Option<CodeRegion>,
}

impl Work {
    pub fn new(category: Category) -> Self {
        Work { category, instructions: 0, accesses: Vec::new(), code: None }
    }

    /// An empty work unit with room for `accesses` accesses before it allocates.
    pub fn with_capacity(category: Category, accesses: usize) -> Self {
        Work { category, instructions: 0, accesses: Vec::with_capacity(accesses), code: None }
    }

    /// Empties the unit for reuse under `category`; keeps the buffer.
    #[inline]
    pub fn reset(&mut self, category: Category) -> &mut Self {
        self.category = category;
        self.instructions = 0;
        self.accesses.clear();
        self.code = None;
        self
    }

    /// The unit runs the code of `region` (fetched before its instructions);
    /// a region of 0 bytes fetches nothing.
    #[inline]
    pub fn code(&mut self, region: CodeRegion) -> &mut Self {
        self.code = (region.bytes > 0).then_some(region);
        self
    }

    /// Appends `n` instructions that make no (L1-missing) access.
    #[inline]
    pub fn instr(&mut self, n: u64) -> &mut Self {
        self.instructions += n;
        self
    }

    /// A load of the line holding `addr`, after the instructions so far.
    #[inline]
    pub fn read(&mut self, addr: u64) -> &mut Self {
        self.accesses.push(Access { addr, write: false, atomic: false, dependent: false, at_instr: self.instructions });
        self
    }

    /// A load of the line holding `addr` whose address depends on the loads
    /// before it (see [`Access::dependent`]).
    #[inline]
    pub fn read_after(&mut self, addr: u64) -> &mut Self {
        self.accesses.push(Access { addr, write: false, atomic: false, dependent: true, at_instr: self.instructions });
        self
    }

    /// A store to the line holding `addr`, after the instructions so far.
    #[inline]
    pub fn write(&mut self, addr: u64) -> &mut Self {
        self.accesses.push(Access { addr, write: true, atomic: false, dependent: false, at_instr: self.instructions });
        self
    }

    /// An atomic compare-and-swap on the line holding `addr`, after the
    /// instructions so far (see [`Access::atomic`]).
    #[inline]
    pub fn atomic(&mut self, addr: u64) -> &mut Self {
        self.accesses.push(Access { addr, write: true, atomic: true, dependent: false, at_instr: self.instructions });
        self
    }

    /// Touches every line of `[addr, addr + len_bytes)`: for each line,
    /// `instr_per_line` instructions, then one access.
    pub fn touch_lines(&mut self, addr: u64, len_bytes: u64, write: bool, instr_per_line: u64) -> &mut Self {
        if len_bytes == 0 {
            return self;
        }
        let first = addr / LINE_BYTES;
        let last = (addr + len_bytes - 1) / LINE_BYTES;
        for line in first..=last {
            self.instructions += instr_per_line;
            self.accesses.push(Access { addr: line * LINE_BYTES, write, atomic: false, dependent: false, at_instr: self.instructions });
        }
        self
    }

    /// Reads every line of `[addr, addr + len_bytes)` (see [`Self::touch_lines`]).
    pub fn read_lines(&mut self, addr: u64, len_bytes: u64, instr_per_line: u64) -> &mut Self {
        self.touch_lines(addr, len_bytes, false, instr_per_line)
    }

    /// Writes every line of `[addr, addr + len_bytes)` (see [`Self::touch_lines`]).
    pub fn write_lines(&mut self, addr: u64, len_bytes: u64, instr_per_line: u64) -> &mut Self {
        self.touch_lines(addr, len_bytes, true, instr_per_line)
    }

    /// Copies `len_bytes` from `src` to `dst` a line at a time: per 64 B,
    /// `instr_per_line` instructions, a read of the source and a write of the
    /// destination (assumes both start at the same offset within a line).
    pub fn copy_lines(&mut self, src: u64, dst: u64, len_bytes: u64, instr_per_line: u64) -> &mut Self {
        let mut off = 0;
        while off < len_bytes {
            self.instructions += instr_per_line;
            let at_instr = self.instructions;
            self.accesses.push(Access { addr: src + off, write: false, atomic: false, dependent: false, at_instr });
            self.accesses.push(Access { addr: dst + off, write: true, atomic: false, dependent: false, at_instr });
            off += LINE_BYTES - (src + off) % LINE_BYTES;
        }
        self
    }

    pub fn category(&self) -> Category {
        self.category
    }

    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    pub fn accesses(&self) -> &[Access] {
        &self.accesses
    }

    pub fn code_region(&self) -> Option<CodeRegion> {
        self.code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_records_positions_in_program_order() {
        let mut w = Work::new(Category::Rx);
        w.instr(10).read(0x100).instr(5).write(0x200).instr(3);
        assert_eq!(w.instructions(), 18);
        assert_eq!(w.accesses(), &[Access { addr: 0x100, write: false, atomic: false, dependent: false, at_instr: 10 }, Access { addr: 0x200, write: true, atomic: false, dependent: false, at_instr: 15 }]);
        let cap = w.accesses.capacity();
        w.reset(Category::Tx);
        assert_eq!((w.category(), w.instructions(), w.accesses().len()), (Category::Tx, 0, 0));
        assert_eq!(w.accesses.capacity(), cap);
    }

    #[test]
    fn line_helpers_touch_each_line_once() {
        let mut w = Work::new(Category::App);
        w.read_lines(0x1000, 1518, 4); // 1518 B from a line start: 24 lines
        assert_eq!(w.accesses().len(), 24);
        assert_eq!(w.instructions(), 96);
        assert_eq!(w.accesses()[23], Access { addr: 0x1000 + 23 * 64, write: false, atomic: false, dependent: false, at_instr: 96 });
        w.reset(Category::App).write_lines(0x1030, 64, 1); // straddles two lines
        assert_eq!(w.accesses().iter().map(|a| a.addr).collect::<Vec<_>>(), vec![0x1000, 0x1040]);
        assert!(w.accesses().iter().all(|a| a.write));
        w.reset(Category::Copy).copy_lines(0x0, 0x10000, 128, 2);
        assert_eq!(w.accesses().len(), 4);
        assert_eq!(w.accesses()[3], Access { addr: 0x10040, write: true, atomic: false, dependent: false, at_instr: 4 });
        assert_eq!(w.reset(Category::App).read_lines(0x40, 0, 9).accesses().len(), 0);
    }
}
