//! Trace mode of the load generator (SPEC 2.3): replays a pcap or pcapng
//! file as tcpdump, Wireshark, dpdk-pdump or scapy write it.
//!
//! The file is read once, at start, into one contiguous buffer of frame bytes
//! plus a small record per frame (time, offset, lengths): every rewrite
//! (destination MAC; with `rewrite_ip` the IPv4 destination, UDP destination
//! port, IPv4 checksum and a zero UDP checksum) is done then, so a departure
//! only copies bytes and allocates nothing.
//!
//! Formats: pcap with microsecond or nanosecond magic in either byte order;
//! pcapng Enhanced and Simple Packet Blocks, each interface's `if_tsresol`
//! (decimal or binary, default microseconds). Parsing is `pcap-file`'s; the
//! timestamps are converted here, in 128-bit integers, so a departure time is
//! exact to the picosecond for any resolution down to 1 ps. Only the Ethernet
//! link type is accepted. Captures hold frames without their FCS: a captured
//! length L is an L + 4 B frame on the wire; a frame under 60 B (a runt) is
//! an error unless `pad_runts` pads it to 64 B (counted); a capture cut by
//! the snap length is sent at its original length (the missing tail as
//! zeros) and counted; an empty file, a packet shorter than an Ethernet
//! header or longer than the snap length is an error.
//!
//! Timing: the trace's own timestamps relative to its first replayed frame,
//! times `time_scale`; or (`timing = "rate"`) the generator's rate and
//! inter-arrival distribution, the trace giving only the frames. A timestamp
//! earlier than the one before it is replayed at the earlier frame's time and
//! counted; a Simple Packet Block (which has no timestamp) likewise. A loop
//! keeps the original gaps: pass p starts at p × (span + mean gap), span being
//! the last frame's time.

use std::fs::File;
use std::io::Read;
use std::net::Ipv4Addr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::{DataLink, PcapError, TsResolution};

use super::source::Departures;
use crate::loadgen::config::{LoadgenConfig, OnOversize, TraceConfig, TraceLoop, TraceTiming};
use crate::wire::ethernet::MIN_FRAME_BYTES;
use crate::engine::time::{Ps, PS_PER_S};
use crate::error::{ConfigError, Error, Result};
use crate::wire::ethernet::{self, FCS_LEN};
use crate::wire::{ipv4, tag, udp};

/// Ethernet frames are at least 60 B before their FCS.
const MIN_DATA_LEN: usize = MIN_FRAME_BYTES as usize - FCS_LEN;
/// Offset of the (outer) EtherType in an Ethernet header.
const ETHERTYPE_OFFSET: usize = 12;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const IPV6_HEADER_LEN: usize = 40;
/// Leading bytes of a pcapng file (a Section Header Block's type).
const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
/// pcapng's default timestamp resolution: microseconds.
const DEFAULT_TSRESOL: u8 = 6;

/// One replayable frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceFrame {
    /// Time relative to the first replayed frame (ps), non-decreasing.
    pub time_ps: Ps,
    /// Where its bytes start in the trace's buffer.
    offset: usize,
    /// Bytes stored (the captured bytes, padded to 60).
    stored: u32,
    /// Length on the wire, FCS included.
    pub frame_bytes: u32,
    /// Whether the last 16 B may carry the measurement tag.
    pub tag: bool,
}

/// What loading the file found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Packets in the file.
    pub read: u64,
    /// Larger than `max_frame_bytes` and left out.
    pub oversize: u64,
    /// Not UDP to `udp_port`, left out.
    pub filtered: u64,
    /// Captured shorter than their original length (sent at that length).
    pub truncated: u64,
    /// Without a timestamp (pcapng Simple Packet Blocks).
    pub untimed: u64,
    /// Timestamped earlier than the frame before.
    pub backwards: u64,
    /// Runts padded to the minimum frame (`loadgen.trace.pad_runts`).
    pub padded: u64,
    /// Frames whose checksums were recomputed (`loadgen.trace.fix_checksums`).
    pub checksummed: u64,
    /// With `loadgen.trace.tag`: frames with no room after their packet for the tag, sent untagged.
    pub untaggable: u64,
}

/// The frames of a trace, loaded once.
pub struct Trace {
    pub path: String,
    data: Vec<u8>,
    frames: Vec<TraceFrame>,
    pub counts: TraceCounts,
}

/// How a frame is rewritten and chosen while loading.
struct Prepare<'a> {
    cfg: &'a TraceConfig,
    dst_mac: ethernet::Mac,
    dst_ip: Ipv4Addr,
    dst_port: u16,
    first_abs: Option<u128>,
    last_ps: Ps,
}

impl Trace {
    /// Reads `cfg.path`; `lg` supplies the addresses frames are rewritten to.
    /// The file is read whole and parsed in place: the trace keeps its
    /// frames anyway, and pcap-file's readers would copy it through an
    /// 8 MB buffer of their own (which also caps a block at 8 MB).
    pub fn load(cfg: &TraceConfig, lg: &LoadgenConfig) -> Result<Trace> {
        let path = cfg.path.as_str();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return Err(Error::io(path, "not a regular file (a pcap or pcapng capture is read whole)"));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        // No more than the file's size when opened: a file still growing is read as it was.
        file.take(meta.len()).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
        Self::load_bytes(&bytes, cfg, lg)
    }

    /// [`Trace::load`] of a capture in memory, named `cfg.path` in errors
    /// (the fuzz target's entry).
    pub fn load_bytes(bytes: &[u8], cfg: &TraceConfig, lg: &LoadgenConfig) -> Result<Trace> {
        let path = cfg.path.as_str();
        let mut trace = Trace { path: path.to_string(), data: Vec::new(), frames: Vec::new(), counts: TraceCounts::default() };
        let mut prep = Prepare {
            cfg,
            dst_mac: ethernet::parse_mac(&lg.dst_mac).unwrap_or(ethernet::Mac([0; 6])),
            dst_ip: lg.dst_ip.parse().unwrap_or(Ipv4Addr::UNSPECIFIED),
            dst_port: lg.dst_port,
            first_abs: None,
            last_ps: 0,
        };
        if bytes.len() < 4 {
            return Err(Error::io(path, format!("not a pcap or pcapng file (only {} bytes)", bytes.len())));
        }
        // The parser is not ours: whatever it does with a hostile file, no panic crosses this line.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if bytes[..4] == PCAPNG_MAGIC {
                trace.read_pcapng(bytes, &mut prep)
            } else {
                trace.read_pcap(bytes, &mut prep)
            }
        }));
        match outcome {
            Ok(r) => r?,
            Err(_) => return Err(Error::io(path, "malformed capture file (the pcap parser gave up)")),
        }
        trace.data.shrink_to_fit();
        trace.frames.shrink_to_fit();
        Ok(trace)
    }

    fn read_pcap(&mut self, bytes: &[u8], prep: &mut Prepare<'_>) -> Result<()> {
        let (mut rest, parser) = in_place(PcapParser::new(bytes)).map_err(|e| self.parse_error(e, "pcap header"))?;
        let header = parser.header();
        // libpcap reads version 2.x (2.4 since 1998) and refuses others.
        if header.version_major != 2 {
            return Err(self.version_error("pcap", header.version_major, header.version_minor, "2.x (2.4)"));
        }
        self.check_link(header.datalink)?;
        let snaplen = header.snaplen;
        let frac_ps: u128 = match header.ts_resolution {
            TsResolution::MicroSecond => 1_000_000,
            TsResolution::NanoSecond => 1_000,
        };
        while !rest.is_empty() {
            let (next, pkt) = in_place(parser.next_raw_packet(rest)).map_err(|e| self.parse_error(e, &format!("packet {}", self.counts.read + 1)))?;
            rest = next;
            let abs = pkt.ts_sec as u128 * PS_PER_S as u128 + pkt.ts_frac as u128 * frac_ps;
            self.check_snaplen(pkt.data.len(), snaplen)?;
            self.add(prep, Some(abs), &pkt.data, pkt.orig_len)?;
        }
        self.check_not_empty()
    }

    /// A captured packet can be no longer than the file's snap length.
    fn check_snaplen(&self, captured: usize, snaplen: u32) -> Result<()> {
        if snaplen > 0 && captured > snaplen as usize {
            return Err(Error::io(&self.path, format!("packet {} holds {captured} B, more than the file's snap length of {snaplen} B", self.counts.read + 1)));
        }
        Ok(())
    }

    fn check_not_empty(&self) -> Result<()> {
        if self.counts.read == 0 {
            return Err(Error::io(&self.path, "the capture holds no packet (a header only)"));
        }
        Ok(())
    }

    fn read_pcapng(&mut self, bytes: &[u8], prep: &mut Prepare<'_>) -> Result<()> {
        let (mut rest, mut parser) = in_place(PcapNgParser::new(bytes)).map_err(|e| self.parse_error(e, "pcapng section header"))?;
        // (link type, if_tsresol, snap length) of each interface of the current section.
        let mut ifaces: Vec<(DataLink, u8, u32)> = Vec::new();
        let (major, minor) = (parser.section().major_version, parser.section().minor_version);
        self.check_pcapng_version(major, minor)?;
        while !rest.is_empty() {
            let (next, block) = in_place(parser.next_block(rest)).map_err(|e| self.parse_error(e, &format!("block after packet {}", self.counts.read)))?;
            rest = next;
            let (iface, ticks, data, orig_len) = match block {
                Block::SectionHeader(shb) => {
                    self.check_pcapng_version(shb.major_version, shb.minor_version)?;
                    ifaces.clear();
                    continue;
                }
                Block::InterfaceDescription(idb) => {
                    let resol = idb.options.iter().find_map(|o| match o {
                        InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
                        _ => None,
                    });
                    ifaces.push((idb.linktype, resol.unwrap_or(DEFAULT_TSRESOL), idb.snaplen));
                    continue;
                }
                Block::EnhancedPacket(b) => (b.interface_id, Some(b.timestamp.as_nanos()), b.data, b.original_len),
                Block::SimplePacket(b) => (0, None, b.data, b.original_len),
                _ => continue,
            };
            let Some(&(link, resol, snaplen)) = ifaces.get(iface as usize) else {
                return Err(Error::io(&self.path, format!("packet {} names interface {iface}, which is not described", self.counts.read + 1)));
            };
            self.check_link(link)?;
            self.check_snaplen(data.len(), snaplen)?;
            // pcap-file 2 hands back the raw tick count as nanoseconds: the units are ours to apply.
            let abs = ticks.map(|t| ticks_to_ps(t, resol));
            self.add(prep, abs, &data, orig_len)?;
        }
        self.check_not_empty()
    }

    /// pcapng 1.0 (1.2 in old writers), as libpcap reads it; a section of
    /// another major version may lay out its blocks otherwise.
    fn check_pcapng_version(&self, major: u16, minor: u16) -> Result<()> {
        if major == 1 && (minor == 0 || minor == 2) {
            return Ok(());
        }
        Err(self.version_error("pcapng", major, minor, "1.0 (or 1.2)"))
    }

    fn version_error(&self, kind: &str, major: u16, minor: u16, allowed: &str) -> Error {
        Error::io(&self.path, format!("{kind} version {major}.{minor} is not supported (allowed: {allowed})"))
    }

    fn check_link(&self, link: DataLink) -> Result<()> {
        if link == DataLink::ETHERNET {
            return Ok(());
        }
        Err(Error::io(&self.path, format!("link type {link:?} ({}) is not supported (allowed: Ethernet, link type 1)", u32::from(link))))
    }

    fn parse_error(&self, e: PcapError, at: &str) -> Error {
        let what = match e {
            PcapError::IoError(ref io) if io.kind() == std::io::ErrorKind::UnexpectedEof => "truncated (unexpected end of file)".to_string(),
            PcapError::IoError(io) => io.to_string(),
            PcapError::InvalidField(f) => format!("malformed ({f})"),
            other => format!("malformed ({other})"),
        };
        Error::io(&self.path, format!("not a valid pcap/pcapng file: {at}: {what}"))
    }

    /// Takes one captured packet: sizes, filters, rewrites and stores it.
    fn add(&mut self, prep: &mut Prepare<'_>, abs_ps: Option<u128>, data: &[u8], orig_len: u32) -> Result<()> {
        self.counts.read += 1;
        let captured = data.len();
        let wire = captured.max(orig_len as usize);
        if wire < ethernet::HEADER_LEN {
            return Err(Error::io(&self.path, format!("packet {} is {wire} B long, shorter than an Ethernet header (14 B)", self.counts.read)));
        }
        if wire + FCS_LEN < MIN_FRAME_BYTES as usize {
            if !prep.cfg.pad_runts {
                return Err(Error::io(
                    &self.path,
                    format!(
                        "packet {} is a runt: {wire} B, under the 60 B minimum without FCS (set loadgen.trace.pad_runts = true to pad such frames, counted)",
                        self.counts.read
                    ),
                ));
            }
            self.counts.padded += 1;
        }
        let frame_bytes = (captured.max(orig_len as usize) + FCS_LEN).max(MIN_FRAME_BYTES as usize);
        if frame_bytes > prep.cfg.max_frame_bytes as usize {
            if prep.cfg.on_oversize == OnOversize::Error {
                return Err(Error::io(
                    &self.path,
                    format!(
                        "packet {} is a {frame_bytes} B frame, over loadgen.trace.max_frame_bytes = {} (set loadgen.trace.on_oversize = \"skip\" to leave such frames out)",
                        self.counts.read, prep.cfg.max_frame_bytes
                    ),
                ));
            }
            self.counts.oversize += 1;
            return Ok(());
        }
        if let Some(port) = prep.cfg.udp_port {
            if udp_dst_port(data) != Some(port) {
                self.counts.filtered += 1;
                return Ok(());
            }
        }
        self.counts.truncated += (captured < orig_len as usize) as u64;
        let time_ps = match abs_ps {
            Some(abs) => {
                let first = *prep.first_abs.get_or_insert(abs);
                let rel = abs.checked_sub(first).map(|d| d.min(Ps::MAX as u128) as Ps);
                // Earlier than the first frame, or than the one before.
                if rel.is_none_or(|r| r < prep.last_ps) {
                    self.counts.backwards += 1;
                }
                rel.unwrap_or(0).max(prep.last_ps)
            }
            None => {
                self.counts.untimed += 1;
                prep.last_ps
            }
        };
        prep.last_ps = time_ps;
        let offset = self.data.len();
        let stored = captured.max(MIN_DATA_LEN);
        self.data.extend_from_slice(data);
        self.data.resize(offset + stored, 0);
        let buf = &mut self.data[offset..];
        ethernet::Packet::new_unchecked(&mut buf[..]).set_dst(prep.dst_mac);
        if prep.cfg.rewrite_ip {
            rewrite_ipv4(&mut buf[..captured.max(ethernet::HEADER_LEN)], prep.dst_ip, prep.dst_port);
        }
        if prep.cfg.fix_checksums {
            self.counts.checksummed += fix_checksums(&mut buf[..captured]) as u64;
        }
        let tag = prep.cfg.tag && packet_end(&buf[..captured]).is_some_and(|end| end + tag::TAG_LEN <= frame_bytes - FCS_LEN);
        self.counts.untaggable += (prep.cfg.tag && !tag) as u64;
        self.frames.push(TraceFrame { time_ps, offset, stored: stored as u32, frame_bytes: frame_bytes as u32, tag });
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn frame(&self, i: usize) -> &TraceFrame {
        &self.frames[i]
    }

    /// The last frame's time (ps); 0 for fewer than two frames.
    pub fn span_ps(&self) -> Ps {
        self.frames.last().map(|f| f.time_ps).unwrap_or(0)
    }

    /// Mean frame size on the wire (FCS included); 64 for an empty trace.
    pub fn mean_frame_bytes(&self) -> f64 {
        if self.frames.is_empty() {
            return MIN_FRAME_BYTES as f64;
        }
        self.frames.iter().map(|f| f.frame_bytes as f64).sum::<f64>() / self.frames.len() as f64
    }

    pub fn max_frame_bytes(&self) -> u32 {
        self.frames.iter().map(|f| f.frame_bytes).max().unwrap_or(MIN_FRAME_BYTES)
    }

    /// Writes frame `f` into `buf` (its length on the wire less the FCS).
    #[inline]
    pub fn write(&self, f: &TraceFrame, buf: &mut [u8]) {
        let n = (f.stored as usize).min(buf.len());
        buf[..n].copy_from_slice(&self.data[f.offset..f.offset + n]);
        buf[n..].fill(0);
    }
}

/// A parser's step over a capture in memory: needing more bytes than are
/// left is a truncated file, as pcap-file's readers report it.
fn in_place<T>(r: std::result::Result<T, PcapError>) -> std::result::Result<T, PcapError> {
    r.map_err(|e| match e {
        PcapError::IncompleteBuffer => PcapError::IoError(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
        e => e,
    })
}

/// Converts a pcapng tick count at resolution `resol` (`if_tsresol`) to ps.
pub fn ticks_to_ps(ticks: u128, resol: u8) -> u128 {
    let e = resol & 0x7f;
    if resol & 0x80 != 0 {
        // 2^-e seconds per tick, rounded to the nearest ps.
        let den = 1u128 << e.min(120);
        (ticks * PS_PER_S as u128 + den / 2) / den
    } else if e <= 12 {
        ticks * 10u128.pow(12 - e as u32)
    } else {
        let den = 10u128.pow((e as u32).min(38) - 12);
        (ticks + den / 2) / den
    }
}

/// The EtherType after any VLAN tags and where the L3 header starts.
fn l3(frame: &[u8]) -> Option<(u16, usize)> {
    let mut off = ETHERTYPE_OFFSET;
    loop {
        let t = u16::from_be_bytes(frame.get(off..off + 2)?.try_into().ok()?);
        if t == ETHERTYPE_VLAN || t == ETHERTYPE_QINQ {
            off += 4;
        } else {
            return Some((t, off + 2));
        }
    }
}

/// Recomputes the IPv4 header checksum and the UDP or TCP checksum of an
/// unfragmented datagram captured whole (IPv4 or IPv6); false when the frame
/// has none of these (or is cut short).
fn fix_checksums(frame: &mut [u8]) -> bool {
    let words = |b: &[u8]| b.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum::<u32>();
    let Some((t, off)) = l3(frame) else { return false };
    // (pseudo-header sum, L4 protocol, L4 start, L4 length)
    let (pseudo, proto, l4, len) = match t {
        ethernet::ETHERTYPE_IPV4 if frame.len() >= off + ipv4::HEADER_LEN => {
            let ip = ipv4::Packet::new_unchecked(&frame[off..]);
            let (hl, total) = (ip.header_len(), ip.total_len() as usize);
            if ip.version() != 4 || hl < ipv4::HEADER_LEN || total < hl || frame.len() < off + total {
                return false;
            }
            let (proto, fragmented) = (ip.protocol(), ip.more_frags_or_offset());
            ipv4::Packet::new_unchecked(&mut frame[off..off + hl]).fill_checksum();
            if fragmented {
                return true;
            }
            (words(&frame[off + 12..off + 20]), proto, off + hl, total - hl)
        }
        ETHERTYPE_IPV6 if frame.len() >= off + IPV6_HEADER_LEN => {
            let len = u16::from_be_bytes([frame[off + 4], frame[off + 5]]) as usize;
            if frame.len() < off + IPV6_HEADER_LEN + len {
                return false;
            }
            (words(&frame[off + 8..off + IPV6_HEADER_LEN]), frame[off + 6], off + IPV6_HEADER_LEN, len)
        }
        _ => return false,
    };
    // Where the checksum field lies in the L4 header, and the header's length.
    let (at, header) = match proto {
        ipv4::PROTO_UDP => (6, udp::HEADER_LEN),
        ipv4::PROTO_TCP => (16, crate::wire::tcp::HEADER_LEN),
        _ => return t == ethernet::ETHERTYPE_IPV4,
    };
    if len < header {
        return false;
    }
    frame[l4 + at..l4 + at + 2].copy_from_slice(&[0, 0]);
    let mut c = crate::wire::checksum_from(pseudo + proto as u32 + len as u32, &frame[l4..l4 + len]);
    if proto == ipv4::PROTO_UDP && c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    frame[l4 + at..l4 + at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Start of the UDP header of an unfragmented (or first-fragment) datagram.
fn udp_start(frame: &[u8]) -> Option<usize> {
    let (t, off) = l3(frame)?;
    match t {
        ethernet::ETHERTYPE_IPV4 => {
            let ip = ipv4::Packet::new_unchecked(frame.get(off..off + ipv4::HEADER_LEN)?);
            let first_fragment = u16::from_be_bytes([frame[off + 6], frame[off + 7]]) & 0x1fff == 0;
            (ip.version() == 4 && ip.header_len() >= ipv4::HEADER_LEN && ip.protocol() == ipv4::PROTO_UDP && first_fragment).then(|| off + ip.header_len())
        }
        ETHERTYPE_IPV6 => (*frame.get(off + 6)? == ipv4::PROTO_UDP).then_some(off + IPV6_HEADER_LEN),
        _ => None,
    }
}

fn udp_dst_port(frame: &[u8]) -> Option<u16> {
    let u = udp_start(frame)?;
    Some(udp::Packet::new_unchecked(frame.get(u..u + udp::HEADER_LEN)?).dst_port())
}

/// Where the IP packet ends (past it is Ethernet padding); `None` if not IP.
fn packet_end(frame: &[u8]) -> Option<usize> {
    let (t, off) = l3(frame)?;
    match t {
        ethernet::ETHERTYPE_IPV4 => Some(off + ipv4::Packet::new_unchecked(frame.get(off..off + ipv4::HEADER_LEN)?).total_len() as usize),
        ETHERTYPE_IPV6 => Some(off + IPV6_HEADER_LEN + u16::from_be_bytes(frame.get(off + 4..off + 6)?.try_into().ok()?) as usize),
        _ => None,
    }
}

/// Points an IPv4 packet at `dst`: address, UDP port, checksums.
fn rewrite_ipv4(frame: &mut [u8], dst: Ipv4Addr, port: u16) {
    let Some((ethernet::ETHERTYPE_IPV4, off)) = l3(frame) else { return };
    let u = udp_start(frame);
    let Some(hdr) = frame.get(off..off + ipv4::HEADER_LEN).map(|h| ipv4::Packet::new_unchecked(h)).filter(|h| h.version() == 4).map(|h| h.header_len()) else { return };
    // An IHL below 5 is no IPv4 header (RFC 791): the frame goes out as captured.
    if hdr < ipv4::HEADER_LEN {
        return;
    }
    let Some(l3) = frame.get_mut(off..off + hdr) else { return };
    let mut ip = ipv4::Packet::new_unchecked(l3);
    ip.set_dst(dst);
    ip.fill_checksum();
    if let Some(h) = u.and_then(|u| frame.get_mut(u..u + udp::HEADER_LEN)) {
        let mut p = udp::Packet::new_unchecked(h);
        p.set_dst_port(port);
        p.set_checksum(0);
    }
}

/// When each frame of a trace leaves.
enum Clock {
    /// The trace's timestamps: pass p, frame k at round((p × period + t_k) × scale).
    Trace { scale: f64, period_ps: f64 },
    Rate(Departures),
}

/// Replays a loaded trace: which frame is next, and when.
pub struct Replay {
    pub trace: Trace,
    clock: Clock,
    /// Passes in all; `None` for no limit.
    passes: Option<u64>,
    pass: u64,
    idx: usize,
    /// The departure of frame `idx` of pass `pass`, or, once the trace is
    /// used up, the time the next departure would have had.
    next_ps: Ps,
    done: bool,
    tag: bool,
    pub sent: u64,
}

impl Replay {
    /// `rate` gives the departures for `timing = "rate"` (ignored otherwise).
    pub fn new(trace: Trace, cfg: &TraceConfig, rate: Departures) -> Result<Replay> {
        let passes = cfg.repeat.passes();
        let clock = match cfg.timing {
            TraceTiming::Rate => Clock::Rate(rate),
            TraceTiming::Trace => {
                let n = trace.len() as f64;
                let span = trace.span_ps() as f64;
                let period_ps = if n > 1.0 { span * n / (n - 1.0) } else { 0.0 };
                if passes != Some(1) && !trace.is_empty() && (period_ps * cfg.time_scale).round() < 1.0 {
                    let value = match cfg.repeat {
                        TraceLoop::Forever(b) => b.to_string(),
                        TraceLoop::Passes(n) => n.to_string(),
                    };
                    let why = "false for a trace whose frames share one timestamp (or loadgen.trace.timing = \"rate\")";
                    return Err(ConfigError::new("loadgen.trace.loop", value, why).into());
                }
                Clock::Trace { scale: cfg.time_scale, period_ps }
            }
        };
        let mut r = Replay { done: trace.is_empty(), tag: cfg.tag, trace, clock, passes, pass: 0, idx: 0, next_ps: 0, sent: 0 };
        r.next_ps = r.time_now();
        Ok(r)
    }

    /// The frames leave at the generator's rate (`timing = "rate"`), not at their timestamps.
    pub fn at_rate(&self) -> bool {
        matches!(self.clock, Clock::Rate(_))
    }

    #[inline]
    fn time_now(&self) -> Ps {
        match &self.clock {
            Clock::Rate(d) => d.next(),
            Clock::Trace { scale, period_ps } => {
                // Past the last pass: where the next pass would have started.
                let t = if self.idx < self.trace.len() { self.trace.frames[self.idx].time_ps as f64 } else { 0.0 };
                ((self.pass as f64 * *period_ps + t) * *scale).round() as Ps
            }
        }
    }

    /// The next frame and its departure; `None` when the trace is used up.
    #[inline]
    pub fn peek(&self) -> Option<(Ps, &TraceFrame)> {
        (!self.done).then(|| (self.next_ps, &self.trace.frames[self.idx]))
    }

    /// Moves past the frame just sent.
    #[inline]
    pub fn advance(&mut self) {
        if self.done {
            return;
        }
        self.sent += 1;
        if let Clock::Rate(d) = &mut self.clock {
            d.sent(self.trace.frames[self.idx].frame_bytes);
        }
        self.idx += 1;
        if self.idx == self.trace.len() {
            self.idx = 0;
            self.pass += 1;
            self.done = self.passes.is_some_and(|p| self.pass >= p);
        }
        self.next_ps = self.time_now();
    }

    /// When transmission of the whole replay ends (the time the departure
    /// after its last frame would have had), if it has ended.
    pub fn end_ps(&self) -> Option<Ps> {
        self.done.then_some(self.next_ps)
    }

    /// Whether frames may carry the measurement tag (in their last 16 B).
    #[inline]
    pub fn tags(&self) -> bool {
        self.tag
    }

    /// Complete passes so far.
    pub fn passes_done(&self) -> u64 {
        self.pass
    }

    /// Frames the configured passes hold (`None` when looping without limit).
    pub fn frames_planned(&self) -> Option<u64> {
        self.passes.map(|p| p * self.trace.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::io::Write;
    use std::path::PathBuf;
    use std::time::Duration;

    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::blocks::simple_packet::SimplePacketBlock;
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::Endianness;

    use super::*;
    use crate::loadgen::config::Interarrival;
    use crate::engine::SimRng;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hostsim-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    /// An Ethernet/IPv4/UDP frame to `port` with `payload` bytes, no FCS.
    fn udp_frame(port: u16, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 42 + payload];
        f[..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((28 + payload) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[192, 168, 0, 1]);
        f[30..34].copy_from_slice(&[192, 168, 0, 2]);
        f[34..36].copy_from_slice(&5000u16.to_be_bytes());
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f[38..40].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
        f[40..42].copy_from_slice(&0xabcdu16.to_be_bytes());
        f
    }

    fn write_pcap(path: &PathBuf, res: TsResolution, endianness: Endianness, link: DataLink, pkts: &[(Duration, Vec<u8>)]) {
        let header = PcapHeader { ts_resolution: res, endianness, datalink: link, ..PcapHeader::default() };
        let mut w = PcapWriter::with_header(File::create(path).unwrap(), header).unwrap();
        for (t, d) in pkts {
            w.write_packet(&PcapPacket::new(*t, d.len() as u32, d)).unwrap();
        }
    }

    /// The tests' small frames are runts: padded unless a test says otherwise.
    fn load(path: &PathBuf, f: impl FnOnce(&mut TraceConfig)) -> Result<Trace> {
        let mut cfg = TraceConfig::new(path.to_str().unwrap());
        cfg.pad_runts = true;
        f(&mut cfg);
        Trace::load(&cfg, &LoadgenConfig::default())
    }

    #[test]
    fn a_trace_path_that_is_not_a_regular_file_is_refused_not_read_forever() {
        // Read whole, /dev/zero would never end; a directory has no capture.
        for path in ["/dev/zero", "/"] {
            let Err(e) = load(&PathBuf::from(path), |_| {}) else { panic!("{path} loaded") };
            let e = e.to_string();
            assert!(e.contains(path) && e.contains("not a regular file"), "{e}");
        }
    }

    fn replay(path: &PathBuf, f: impl FnOnce(&mut TraceConfig)) -> Vec<Ps> {
        let mut cfg = TraceConfig::new(path.to_str().unwrap());
        cfg.pad_runts = true;
        f(&mut cfg);
        let trace = Trace::load(&cfg, &LoadgenConfig::default()).unwrap();
        let rate = Departures::new(1e6, Interarrival::Constant, 0, SimRng::new(1, 2));
        let mut r = Replay::new(trace, &cfg, rate).unwrap();
        let mut out = vec![];
        while let Some((t, _)) = r.peek() {
            out.push(t);
            r.advance();
            assert!(out.len() < 1000, "replay does not end");
        }
        out
    }

    const EPOCH: u64 = 1_700_000_000;

    #[test]
    fn pcap_us_and_ns_either_byte_order_are_ps_exact() {
        let us = |s: u64, u: u64| Duration::from_secs(EPOCH + s) + Duration::from_micros(u);
        let pkts = vec![(us(0, 999_999), udp_frame(9, 10)), (us(1, 3), udp_frame(9, 10)), (us(1, 10), udp_frame(9, 10))];
        for e in [Endianness::Little, Endianness::Big] {
            let p = tmp(&format!("us-{e:?}.pcap"));
            write_pcap(&p, TsResolution::MicroSecond, e, DataLink::ETHERNET, &pkts);
            assert_eq!(replay(&p, |_| ()), vec![0, 4_000_000, 11_000_000]);
        }
        let ns = |n: u64| Duration::from_secs(EPOCH) + Duration::from_nanos(n);
        let pkts = vec![(ns(1), udp_frame(9, 10)), (ns(8), udp_frame(9, 10)), (ns(1_000_000_123), udp_frame(9, 10))];
        for e in [Endianness::Little, Endianness::Big] {
            let p = tmp(&format!("ns-{e:?}.pcap"));
            write_pcap(&p, TsResolution::NanoSecond, e, DataLink::ETHERNET, &pkts);
            assert_eq!(replay(&p, |_| ()), vec![0, 7_000, 1_000_000_122_000]);
        }
    }

    fn write_pcapng(path: &PathBuf, resol: Option<u8>, link: DataLink, ticks: &[u64], data: &[u8]) {
        let mut w = PcapNgWriter::new(File::create(path).unwrap()).unwrap();
        let options = resol.map(|r| vec![InterfaceDescriptionOption::IfTsResol(r)]).unwrap_or_default();
        w.write_pcapng_block(InterfaceDescriptionBlock { linktype: link, snaplen: 65535, options }).unwrap();
        for &t in ticks {
            // pcap-file 2 stores the Duration's nanoseconds as the raw tick count.
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_nanos(t),
                original_len: data.len() as u32,
                data: Cow::Borrowed(data),
                options: vec![],
            };
            w.write_pcapng_block(epb).unwrap();
        }
        w.write_pcapng_block(SimplePacketBlock { original_len: data.len() as u32, data: Cow::Borrowed(data) }).unwrap();
        w.into_inner().flush().unwrap();
    }

    #[test]
    fn pcapng_honours_if_tsresol() {
        let f = udp_frame(9, 10);
        let base = EPOCH * 1_000_000_000;
        let p = tmp("ns.pcapng");
        write_pcapng(&p, Some(9), DataLink::ETHERNET, &[base + 5, base + 6, base + 1_005], &f);
        // The Simple Packet Block has no timestamp: it leaves with the frame before.
        assert_eq!(replay(&p, |_| ()), vec![0, 1_000, 1_000_000, 1_000_000]);
        let p = tmp("us.pcapng");
        write_pcapng(&p, None, DataLink::ETHERNET, &[EPOCH * 1_000_000, EPOCH * 1_000_000 + 3], &f);
        assert_eq!(replay(&p, |_| ()), vec![0, 3_000_000, 3_000_000]);
        let p = tmp("bin.pcapng");
        write_pcapng(&p, Some(0x80 | 10), DataLink::ETHERNET, &[1024, 1025], &f);
        assert_eq!(replay(&p, |_| ()), vec![0, 976_562_500, 976_562_500]);
        let t = load(&p, |_| ()).unwrap();
        assert_eq!((t.counts.read, t.counts.untimed), (3, 1));
        assert_eq!(ticks_to_ps(7, 12), 7);
        assert_eq!(ticks_to_ps(1_500, 15), 2);
    }

    /// A frame stamped earlier than the one before, or than the first
    /// frame, leaves with the frame before and is counted.
    #[test]
    fn frames_stamped_backwards_leave_with_the_frame_before_and_are_counted() {
        let s = |n: u64| Duration::from_secs(EPOCH) + Duration::from_nanos(n);
        let p = tmp("backwards.pcap");
        let pkts: Vec<_> = [500, 300, 600, 400, 700].iter().map(|&n| (s(n), udp_frame(9, 18))).collect();
        write_pcap(&p, TsResolution::NanoSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        assert_eq!(replay(&p, |_| ()), vec![0, 0, 100_000, 100_000, 200_000]);
        assert_eq!(load(&p, |_| ()).unwrap().counts.backwards, 2);
    }

    #[test]
    fn time_scale_and_loop_keep_the_gaps() {
        let s = |n: u64| Duration::from_secs(EPOCH) + Duration::from_nanos(n);
        let p = tmp("loop.pcap");
        write_pcap(&p, TsResolution::NanoSecond, Endianness::Little, DataLink::ETHERNET, &[
            (s(0), udp_frame(9, 1)),
            (s(100), udp_frame(9, 1)),
            (s(400), udp_frame(9, 1)),
        ]);
        assert_eq!(replay(&p, |c| c.time_scale = 0.5), vec![0, 50_000, 200_000]);
        assert_eq!(replay(&p, |c| c.time_scale = 2.0), vec![0, 200_000, 800_000]);
        // Mean gap 200 ns: pass 2 starts 400 + 200 ns after pass 1.
        assert_eq!(replay(&p, |c| c.repeat = TraceLoop::Passes(3)), vec![0, 100_000, 400_000, 600_000, 700_000, 1_000_000, 1_200_000, 1_300_000, 1_600_000]);
        assert_eq!(replay(&p, |c| c.repeat = TraceLoop::Forever(false)).len(), 3);
        // Rate timing ignores the timestamps: 1 Mpps.
        assert_eq!(replay(&p, |c| c.timing = TraceTiming::Rate), vec![0, 1_000_000, 2_000_000]);
        // A trace whose frames share one timestamp cannot loop on its own clock.
        let q = tmp("flat.pcap");
        write_pcap(&q, TsResolution::NanoSecond, Endianness::Little, DataLink::ETHERNET, &[(s(5), udp_frame(9, 1))]);
        let mut cfg = TraceConfig::new(q.to_str().unwrap());
        cfg.repeat = TraceLoop::Forever(true);
        cfg.pad_runts = true;
        let t = Trace::load(&cfg, &LoadgenConfig::default()).unwrap();
        let rate = Departures::new(1e6, Interarrival::Constant, 0, SimRng::new(1, 2));
        let err = Replay::new(t, &cfg, rate).err().unwrap().to_string();
        assert!(err.starts_with("loadgen.trace.loop: invalid value 'true'"), "{err}");
    }

    #[test]
    fn empty_captures_empty_frames_runts_and_overlong_packets_are_errors() {
        let s = |n: u64| Duration::from_secs(EPOCH) + Duration::from_nanos(n);
        let err = |pkts: &[(Duration, Vec<u8>)], pad: bool| {
            let p = tmp("bad.pcap");
            write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, pkts);
            load(&p, |c| c.pad_runts = pad).err().map(|e| e.to_string())
        };
        let e = err(&[], false).unwrap();
        assert!(e.contains("holds no packet"), "{e}");
        let e = err(&[(s(0), vec![])], true).unwrap();
        assert!(e.contains("packet 1 is 0 B long, shorter than an Ethernet header"), "{e}");
        let runt = udp_frame(9, 1);
        let e = err(&[(s(0), udp_frame(9, 30)), (s(1), runt.clone())], false).unwrap();
        assert!(e.contains("packet 2 is a runt: 43 B") && e.contains("loadgen.trace.pad_runts"), "{e}");
        let p = tmp("runt.pcap");
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &[(s(0), runt)]);
        let t = load(&p, |c| c.pad_runts = true).unwrap();
        assert_eq!((t.counts.padded, t.frame(0).frame_bytes), (1, 64));
        // A packet longer than the file says it captures at most.
        // (Written by hand: the pcap writer refuses such a packet.)
        let p = tmp("snap.pcap");
        let big = udp_frame(9, 100);
        let mut bytes = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 64, 1] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for v in [EPOCH as u32, 0, big.len() as u32, big.len() as u32] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&big);
        std::fs::write(&p, bytes).unwrap();
        let e = load(&p, |_| {}).err().unwrap().to_string();
        assert!(e.contains("packet 1") && e.contains("snap"), "{e}");
    }

    #[test]
    fn oversize_frames_are_counted_or_refused() {
        let t0 = Duration::from_secs(EPOCH);
        let p = tmp("big.pcap");
        // Captured 1514 B is a 1518 B frame (fits); 1515 B captured is 1519 B (does not).
        let pkts = vec![(t0, udp_frame(9, 1472)), (t0, udp_frame(9, 1473)), (t0, udp_frame(9, 5000)), (t0, udp_frame(9, 1))];
        write_pcap(&p, TsResolution::NanoSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let t = load(&p, |_| ()).unwrap();
        assert_eq!((t.len(), t.counts.oversize, t.counts.read), (2, 2, 4));
        assert_eq!((t.frame(0).frame_bytes, t.frame(1).frame_bytes), (1518, 64));
        let t = load(&p, |c| c.max_frame_bytes = 9216).unwrap();
        assert_eq!((t.len(), t.counts.oversize, t.max_frame_bytes()), (4, 0, 5046));
        let err = load(&p, |c| c.on_oversize = OnOversize::Error).err().unwrap().to_string();
        assert!(err.contains("big.pcap") && err.contains("packet 2 is a 1519 B frame"), "{err}");
    }

    #[test]
    fn udp_port_filter_and_rewrites() {
        let t0 = Duration::from_secs(EPOCH);
        let mut arp = udp_frame(9, 20);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut vlan = udp_frame(11211, 20);
        vlan.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        let p = tmp("filter.pcap");
        let pkts = vec![(t0, udp_frame(11211, 30)), (t0, udp_frame(53, 30)), (t0, arp), (t0, vlan)];
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let t = load(&p, |c| {
            c.udp_port = Some(11211);
            c.rewrite_ip = true;
        })
        .unwrap();
        assert_eq!((t.len(), t.counts.filtered), (2, 2));
        let lg = LoadgenConfig::default();
        for (i, l3) in [(0usize, 14usize), (1, 18)] {
            let f = t.frame(i);
            let mut buf = vec![0xeeu8; f.frame_bytes as usize - 4];
            t.write(f, &mut buf);
            assert_eq!(ethernet::Mac(buf[..6].try_into().unwrap()), ethernet::parse_mac(&lg.dst_mac).unwrap());
            let ip = ipv4::Packet::new_unchecked(&buf[l3..]);
            assert_eq!(ip.dst(), lg.dst_ip.parse::<Ipv4Addr>().unwrap());
            assert!(ip.verify_checksum());
            let u = udp::Packet::new_unchecked(&buf[l3 + 20..]);
            assert_eq!((u.dst_port(), u.checksum(), u.src_port()), (lg.dst_port, 0, 5000));
        }
        // Without rewrite_ip only the MAC changes.
        let t = load(&p, |_| ()).unwrap();
        let mut buf = vec![0u8; t.frame(0).frame_bytes as usize - 4];
        t.write(t.frame(0), &mut buf);
        assert_eq!((&buf[30..34], &buf[36..38]), (&[192u8, 168, 0, 2][..], &11211u16.to_be_bytes()[..]));
    }

    #[test]
    fn a_file_of_another_version_is_refused_by_its_version() {
        let f = udp_frame(9, 20);
        let p = tmp("v99.pcapng");
        write_pcapng(&p, None, DataLink::ETHERNET, &[EPOCH * 1_000_000], &f);
        assert!(load(&p, |_| ()).is_ok());
        // The section header: type, length, byte-order magic, then major and minor (little-endian here).
        let mut b = std::fs::read(&p).unwrap();
        b[12..16].copy_from_slice(&[9, 0, 9, 0]);
        std::fs::write(&p, &b).unwrap();
        let err = load(&p, |_| ()).err().unwrap().to_string();
        assert!(err.contains("pcapng version 9.9 is not supported (allowed: 1.0 (or 1.2))"), "{err}");
        let p = tmp("v9.pcap");
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &[(Duration::from_secs(EPOCH), f)]);
        let mut b = std::fs::read(&p).unwrap();
        b[4..8].copy_from_slice(&[9, 0, 9, 0]);
        std::fs::write(&p, &b).unwrap();
        let err = load(&p, |_| ()).err().unwrap().to_string();
        assert!(err.contains("pcap version 9.9 is not supported (allowed: 2.x (2.4))"), "{err}");
    }

    #[test]
    fn ihl_below_five_is_left_as_captured() {
        // A legal pcap whose IPv4 headers claim 0..=4 words (RFC 791 allows
        // none below 5): every option that reads the header must pass them by.
        let t0 = Duration::from_secs(EPOCH);
        let p = tmp("ihl.pcap");
        let pkts: Vec<_> = (0u8..5)
            .map(|ihl| {
                let mut f = udp_frame(11211, 30);
                f[14] = 0x40 | ihl;
                (t0, f)
            })
            .collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let t = load(&p, |c| {
            c.rewrite_ip = true;
            c.fix_checksums = true;
            c.tag = true;
        })
        .unwrap();
        assert_eq!((t.len(), t.counts.checksummed), (5, 0));
        for (i, (_, orig)) in pkts.iter().enumerate() {
            let f = t.frame(i);
            let mut buf = vec![0u8; f.frame_bytes as usize - 4];
            t.write(f, &mut buf);
            assert_eq!(&buf[14..orig.len()], &orig[14..], "frame {i}: the IP header and payload as captured");
        }
        let t = load(&p, |c| c.udp_port = Some(11211)).unwrap();
        assert_eq!((t.len(), t.counts.filtered), (0, 5));
    }

    #[test]
    fn tag_goes_only_into_padding() {
        let t0 = Duration::from_secs(EPOCH);
        let p = tmp("tag.pcap");
        // 42 + 1 B payload: 17 B of padding in a 60 B frame, room for the tag; 42 + 10 B: no room.
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &[(t0, udp_frame(9, 1)), (t0, udp_frame(9, 10))]);
        let t = load(&p, |c| c.tag = true).unwrap();
        assert_eq!((t.frame(0).tag, t.frame(1).tag), (true, false));
        assert_eq!(t.counts.untaggable, 1, "said in a warning (Loadgen::warnings)");
        assert!(!load(&p, |_| ()).unwrap().frame(0).tag);
        assert_eq!(load(&p, |_| ()).unwrap().counts.untaggable, 0, "no tag asked for");
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        let err = |p: &PathBuf| load(p, |_| ()).err().expect("must fail").to_string();
        let missing = tmp("missing.pcap");
        assert!(matches!(load(&missing, |_| ()), Err(Error::Io { .. })));
        let p = tmp("short.pcap");
        std::fs::write(&p, [0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]).unwrap();
        let e = err(&p);
        assert!(e.contains("short.pcap") && e.contains("truncated"), "{e}");
        std::fs::write(&p, b"GIF89a not a capture at all").unwrap();
        let e = err(&p);
        assert!(e.contains("short.pcap") && e.contains("magic"), "{e}");
        std::fs::write(&p, b"ab").unwrap();
        assert!(err(&p).contains("not a pcap"));
        let p = tmp("raw.pcap");
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::RAW, &[(Duration::ZERO, vec![0x45; 40])]);
        let e = err(&p);
        assert!(e.contains("raw.pcap") && e.contains("link type RAW (101)"), "{e}");
        let p = tmp("sll.pcapng");
        write_pcapng(&p, None, DataLink::LINUX_SLL, &[1], &[0; 40]);
        assert!(err(&p).contains("link type LINUX_SLL"));
        // A pcap cut inside a packet record, and a pcapng cut inside a block.
        let good = tmp("good.pcap");
        write_pcap(&good, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &[(Duration::ZERO, udp_frame(9, 100))]);
        let bytes = std::fs::read(&good).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 30]).unwrap();
        assert!(err(&p).contains("truncated"));
        let ng = tmp("good.pcapng");
        write_pcapng(&ng, None, DataLink::ETHERNET, &[1, 2], &udp_frame(9, 100));
        let bytes = std::fs::read(&ng).unwrap();
        let cut = tmp("cut.pcapng");
        for n in [10, 40, bytes.len() - 7] {
            std::fs::write(&cut, &bytes[..n]).unwrap();
            let e = err(&cut);
            assert!(e.contains("cut.pcapng") && e.contains("not a valid pcap"), "{e}");
        }
    }

    #[test]
    fn a_reflector_returns_the_replay_and_the_run_drains() {
        use crate::config::SimConfig;
        let us = |u: u64| Duration::from_secs(EPOCH) + Duration::from_micros(u);
        let p = tmp("system.pcap");
        let pkts: Vec<_> = (0..10).map(|i| (us(i * 10), udp_frame(9, 100))).collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let mut cfg = SimConfig::default();
        cfg.loadgen.trace = Some(TraceConfig::new(p.to_str().unwrap()));
        // 1 ms of transmission, a 90 µs trace: the replay ends early and the run drains.
        let out = crate::system::checked_run(&cfg).unwrap();
        let lg = &out["loadgen"];
        assert_eq!((lg["tx_packets"].as_u64(), lg["rx_packets"].as_u64(), lg["rx_untagged_packets"].as_u64()), (Some(10), Some(10), Some(10)));
        assert_eq!((lg["trace_frames_sent"].as_u64(), lg["trace_complete"].as_bool()), (Some(10), Some(true)));
        // Offered over the trace's own length (10 frames, 10 µs apart): 100 kpps.
        assert!((lg["offered_pps"].as_f64().unwrap() - 1e5).abs() < 1e-6, "{}", lg["offered_pps"]);
        assert_eq!(lg["measured_window_ps"].as_u64(), Some(100_000_000));
        // Looping without limit is cut by sim.duration (100 µs: frames at 0..90 µs).
        cfg.loadgen.trace.as_mut().unwrap().repeat = TraceLoop::Forever(true);
        cfg.sim.duration_ps = 100_000_000 + 1;
        let out = crate::system::checked_run(&cfg).unwrap();
        assert_eq!(out["loadgen"]["trace_frames_sent"].as_u64(), Some(11));
        assert_eq!(out["loadgen"]["rx_packets"].as_u64(), Some(11));
        cfg.loadgen.trace.as_mut().unwrap().repeat = TraceLoop::Passes(2);
        let out = crate::system::checked_run(&cfg).unwrap();
        let w = out["warnings"].to_string();
        assert!(w.contains("after 11 of 20 trace frames"), "{w}");
    }

    /// Frames stamped within the warm-up that the wire carries past it are
    /// measured: no warning that nothing was; one when nothing was.
    #[test]
    fn a_replay_stamped_within_the_warm_up_is_measured_when_it_leaves_after() {
        use crate::config::SimConfig;
        let p = tmp("same-time.pcap");
        // 2000 frames of 1518 B at one timestamp: 123.04 ns each on 100 GbE, 246 µs in
        // all; 813 of them leave within a 100 µs warm-up.
        let pkts: Vec<_> = (0..2000).map(|_| (Duration::from_secs(EPOCH), udp_frame(9, 1472))).collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let mut cfg = SimConfig::default();
        cfg.loadgen.trace = Some(TraceConfig::new(p.to_str().unwrap()));
        (cfg.sim.warmup_ps, cfg.sim.duration_ps) = (100_000_000, 1_000_000_000);
        let out = crate::system::checked_run(&cfg).unwrap();
        let (w, sent) = (out["warnings"].to_string(), out["loadgen"]["tx_packets"].as_u64().unwrap());
        assert!(!w.contains("nothing was measured") && sent == 2000 - 813, "{sent} measured: {w}");
        cfg.sim.warmup_ps = 600_000_000;
        let out = crate::system::checked_run(&cfg).unwrap();
        assert_eq!(out["loadgen"]["tx_packets"].as_u64(), Some(0));
        assert!(out["warnings"].to_string().contains("nothing was measured"), "{}", out["warnings"]);
    }

    /// Frames a link-limited replay could not start before the run ended are
    /// never sent: counted apart and warned, not sent nor in flight.
    #[test]
    fn frames_the_link_cannot_start_before_the_end_are_not_sent() {
        use crate::config::SimConfig;
        let p = tmp("backlog.pcap");
        // 20 000 frames of 1518 B at one timestamp: 123.04 ns each on 100 GbE,
        // 2.46 ms in all; the run ends at 100 µs of traffic plus 100 µs of drain.
        let pkts: Vec<_> = (0..20_000).map(|_| (Duration::from_secs(EPOCH), udp_frame(9, 1472))).collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let mut cfg = SimConfig::default();
        cfg.loadgen.trace = Some(TraceConfig::new(p.to_str().unwrap()));
        (cfg.sim.warmup_ps, cfg.sim.duration_ps, cfg.sim.drain_ps) = (0, 100_000_000, 100_000_000);
        let out = crate::system::checked_run(&cfg).unwrap();
        let lg = &out["loadgen"];
        let (sent, unsent) = (lg["trace_frames_sent"].as_u64().unwrap(), lg["trace_unsent_frames"].as_u64().unwrap());
        // The run ends at 200 µs plus twice the 1 µs propagation: 202 µs / 123.04 ns, rounded up.
        assert_eq!((sent, unsent), (1642, 20_000 - 1642));
        let total = &out["accounting"]["total"];
        assert_eq!(total["sent"].as_u64(), Some(sent));
        assert!(total["in_flight"].as_u64().unwrap() < 20, "{total}");
        assert!(out["warnings"].to_string().contains("were never sent (loadgen.trace_unsent_frames)"), "{}", out["warnings"]);
    }

    /// A trace none of whose frames is replayed is an error, not an idle run (an MSB of 0 that passed).
    #[test]
    fn a_trace_with_no_frame_to_replay_is_an_error() {
        use crate::config::SimConfig;
        let p = tmp("nothing.pcap");
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &[(Duration::from_secs(EPOCH), udp_frame(9, 20)), (Duration::from_secs(EPOCH), udp_frame(9, 1472))]);
        let mut cfg = SimConfig::default();
        let mut t = TraceConfig::new(p.to_str().unwrap());
        t.udp_port = Some(9);
        t.max_frame_bytes = 64;
        cfg.loadgen.trace = Some(t.clone());
        let err = crate::system::run(&cfg).err().unwrap().to_string();
        assert!(err.contains("none of the capture's 2 packets is replayed (2 larger than loadgen.trace.max_frame_bytes)"), "{err}");
        (t.udp_port, t.max_frame_bytes) = (Some(10), 1518);
        cfg.loadgen.trace = Some(t);
        let err = crate::system::run(&cfg).err().unwrap().to_string();
        assert!(err.contains("(2 not UDP to loadgen.trace.udp_port)"), "{err}");
    }

    /// A rate beside a trace replayed at its timestamps is said to be ignored; at `timing = "rate"` it is used.
    #[test]
    fn a_rate_the_trace_timing_ignores_is_said_to_be() {
        use crate::config::SimConfig;
        use crate::loadgen::config::{Rate, RateUnit};
        let p = tmp("rate-ignored.pcap");
        let pkts: Vec<_> = (0..100u64).map(|i| (Duration::from_micros(EPOCH * 1_000_000 + i), udp_frame(9, 64))).collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let mut cfg = SimConfig::default();
        cfg.loadgen.trace = Some(TraceConfig::new(p.to_str().unwrap()));
        (cfg.sim.warmup_ps, cfg.sim.duration_ps) = (0, 200_000_000);
        let said = |cfg: &SimConfig| crate::system::checked_run(cfg).unwrap()["warnings"].to_string().contains("loadgen.rate is ignored");
        assert!(!said(&cfg), "the default rate is not the user's");
        cfg.loadgen.rate = Rate { unit: RateUnit::Pps, value: 1e6 };
        assert!(said(&cfg));
        cfg.loadgen.trace.as_mut().unwrap().timing = TraceTiming::Rate;
        assert!(!said(&cfg));
    }

    /// Header settings beside a trace are said to be ignored: its frames keep their own bytes.
    #[test]
    fn header_settings_beside_a_trace_are_said_to_be_ignored() {
        use crate::config::SimConfig;
        use crate::loadgen::config::Protocol;
        let p = tmp("headers-ignored.pcap");
        let pkts: Vec<_> = (0..100u64).map(|i| (Duration::from_micros(EPOCH * 1_000_000 + i), udp_frame(9, 64))).collect();
        write_pcap(&p, TsResolution::MicroSecond, Endianness::Little, DataLink::ETHERNET, &pkts);
        let mut cfg = SimConfig::default();
        cfg.loadgen.trace = Some(TraceConfig::new(p.to_str().unwrap()));
        (cfg.sim.warmup_ps, cfg.sim.duration_ps) = (0, 200_000_000);
        let said = |cfg: &SimConfig| {
            let w = crate::system::checked_run(cfg).unwrap()["warnings"].clone();
            w.as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("keep their own bytes")).map(str::to_owned)
        };
        assert_eq!(said(&cfg), None);
        cfg.loadgen.flows = 4;
        cfg.loadgen.protocol = Protocol::Raw;
        let w = said(&cfg).expect("a warning");
        assert!(w.starts_with("loadgen.flows, loadgen.protocol ignored: a trace's frames"), "{w}");
    }
}
