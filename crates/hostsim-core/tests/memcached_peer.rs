//! Functional equivalence with a real memcached: the same request datagrams
//! go to `memcached -U` on loopback and to `kvs::Store::handle_datagram`, and
//! every response datagram (header and payload) must be identical.
//!
//! memcached runs with `-I 8k -o slab_chunk_max=4096` so that a value larger
//! than its item limit still fits one datagram (with the default 1 MiB limit
//! such a set would span datagrams, which a UDP request cannot); the store
//! gets the same limit as `ValueLimit::MemcachedItemBytes(8192)`.

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hostsim_core::kvs::{Datagrams, Store, StoreConfig, ValueLimit};

/// Kills the server when the test ends, also on a failed assertion.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_memcached() -> (Server, UdpSocket, u16) {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("memcached")
        .args(["-U", &port.to_string(), "-p", "0", "-l", "127.0.0.1", "-m", "64", "-t", "1"])
        .args(["-I", "8k", "-o", "slab_chunk_max=4096", "-u", "nobody"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start memcached ({e}); install it with `apt-get install -y memcached`"));
    let mut server = Server(child);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 2048];
    loop {
        if let Ok(Some(status)) = server.0.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = server.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("memcached exited at start ({status}): {err}");
        }
        // Request id 0xffff is only used for this readiness probe.
        let _ = sock.send(b"\xff\xff\x00\x00\x00\x01\x00\x00get ready-probe\r\n");
        if let Ok(n) = sock.recv(&mut buf) {
            if buf[..n].ends_with(b"END\r\n") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "memcached on UDP port {port} did not answer within 10 s");
    }
    (server, sock, port)
}

/// Sends one request and collects the datagrams: `expect` of them with a
/// generous timeout, then waits briefly for any extra one.
fn exchange(sock: &UdpSocket, req: &[u8], expect: usize) -> Vec<Vec<u8>> {
    sock.send(req).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 70_000];
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    while got.len() < expect {
        match sock.recv(&mut buf) {
            Ok(n) => got.push(buf[..n].to_vec()),
            Err(_) => break,
        }
    }
    sock.set_read_timeout(Some(Duration::from_millis(if expect == 0 { 60 } else { 20 }))).unwrap();
    while let Ok(n) = sock.recv(&mut buf) {
        got.push(buf[..n].to_vec());
    }
    got
}

fn frame(id: u16, body: &[u8]) -> Vec<u8> {
    let mut v = vec![(id >> 8) as u8, id as u8, 0, 0, 0, 1, 0, 0];
    v.extend_from_slice(body);
    v
}

fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'!' + (x % 90) as u8
        })
        .collect()
}

fn set(key: &str, flags: u32, val: &[u8], noreply: bool) -> Vec<u8> {
    let mut v = format!("set {key} {flags} 0 {}{}\r\n", val.len(), if noreply { " noreply" } else { "" }).into_bytes();
    v.extend_from_slice(val);
    v.extend_from_slice(b"\r\n");
    v
}

/// The request bodies (after the frame header), or whole datagrams for the header cases.
fn requests() -> Vec<(bool, Vec<u8>)> {
    let body = |b: Vec<u8>| (false, b);
    let raw = |b: Vec<u8>| (true, b);
    let mut r = Vec::new();
    let sizes = [0usize, 1, 10, 100, 500, 1000, 1374, 1392, 2000, 2784, 3000, 4000, 5000];
    for (i, &n) in sizes.iter().enumerate() {
        r.push(body(set(&format!("k{i}"), i as u32 * 7, &value(i as u64, n), false)));
    }
    for i in 0..sizes.len() {
        r.push(body(format!("get k{i}\r\n").into_bytes()));
    }
    for i in 0..6 {
        r.push(body(format!("get absent{i}\r\n").into_bytes()));
    }
    // Multi-key gets: hits, misses, a first-key miss (memcached's bare header), big values.
    for line in [
        "get k1 k2 k3",
        "get k1 absent k2",
        "get absent k1",
        "get absent absent2 k4",
        "get absent absent2",
        "get k9 k10",
        "get k12 absent k6",
        "get k0 k0 k0",
        "get  k1   k2 ",
        "gets k1 k5",
    ] {
        r.push(body(format!("{line}\r\n").into_bytes()));
    }
    // Overwrites and deletes.
    r.push(body(set("k1", 99, b"new", false)));
    r.push(body(b"get k1\r\n".to_vec()));
    r.push(body(set("k1", 0, &value(77, 3333), false)));
    r.push(body(b"get k1 k2\r\n".to_vec()));
    r.push(body(b"delete k2\r\n".to_vec()));
    r.push(body(b"delete k2\r\n".to_vec()));
    r.push(body(b"get k2\r\n".to_vec()));
    r.push(body(b"delete k3 0\r\n".to_vec()));
    r.push(body(b"delete k4 noreply\r\n".to_vec()));
    r.push(body(b"get k3 k4\r\n".to_vec()));
    r.push(body(b"delete k5 5\r\n".to_vec()));
    // noreply and several commands per datagram.
    r.push(body(set("nr", 3, b"quiet", true)));
    r.push(body(b"get nr\r\n".to_vec()));
    let mut two = set("nr2", 0, b"x", true);
    two.extend_from_slice(b"get absent nr2\r\n");
    r.push(body(two));
    let mut three = set("s1", 1, b"one", false);
    three.extend_from_slice(b"get absent s1\r\nget s1\r\nget absent s1\r\n");
    r.push(body(three));
    r.push(body(b"get k6\nget absent\n".to_vec()));
    r.push(body(b"get k6\r\nget k7".to_vec()));
    r.push(body(set("neg", 0, b"gone", false).into_iter().chain(b"get neg\r\n".iter().copied()).collect()));
    r.push(body(b"set e 0 -1 1\r\nz\r\nget e\r\n".to_vec()));
    r.push(body(b"set zero 4294967297 0 0\r\n\r\nget zero\r\n".to_vec()));
    // Malformed: frame header, commands, keys, data blocks, sizes.
    r.push(raw(vec![0x00, 0x10, 0x00]));
    r.push(raw(vec![0x00, 0x11, 0, 0, 0, 1, 0, 0]));
    r.push(raw([&[0x00, 0x12, 0, 0, 0, 2, 0, 0][..], b"get k6\r\n"].concat()));
    r.push(raw([&[0x00, 0x13, 0, 5, 0, 1, 0xab, 0xcd][..], b"get k6\r\n"].concat()));
    r.push(body(b"foo bar\r\n".to_vec()));
    r.push(body(b"GET k6\r\n".to_vec()));
    r.push(body(b"get\r\n".to_vec()));
    r.push(body(b"\r\n".to_vec()));
    r.push(body(b"frobnicate k6\r\n".to_vec()));
    let long = "L".repeat(251);
    let ok250 = "M".repeat(250);
    r.push(body(format!("get {long}\r\n").into_bytes()));
    r.push(body(format!("get k6 {long}\r\n").into_bytes()));
    r.push(body(set(&long, 0, b"v", false)));
    r.push(body(set(&long, 0, b"v", true)));
    r.push(body(set(&ok250, 0, b"v250", false)));
    r.push(body(format!("get {ok250}\r\n").into_bytes()));
    r.push(body(format!("delete {long}\r\n").into_bytes()));
    r.push(body(b"set bad 0 0 3\r\nabcdef\r\n".to_vec()));
    r.push(body(b"set bad 0 0 3 noreply\r\nabcdef\r\n".to_vec()));
    r.push(body(b"get bad\r\n".to_vec()));
    r.push(body(b"set bf x 0 1\r\nz\r\n".to_vec()));
    r.push(body(b"set bf -1 0 1\r\nz\r\n".to_vec()));
    r.push(body(b"set bf 0 0 -1\r\nz\r\n".to_vec()));
    r.push(body(b"set bf 0 0\r\n".to_vec()));
    r.push(body(b"set bf 0 0 1 noreply extra\r\nz\r\n".to_vec()));
    r.push(body(set("k6", 0, &value(9, 9000), false)));
    r.push(body(b"get k6\r\n".to_vec()));
    r.push(body(set("k7", 0, &value(9, 9000), true)));
    r.push(body(b"get k7\r\n".to_vec()));
    r.push(body(set("edge", 0, &value(5, 8130), false)));
    r.push(body(set("edge", 0, &value(5, 8131), false)));
    r.push(body(set("edge", 1, &value(5, 8127), false)));
    r.push(body(b"get edge\r\n".to_vec()));
    r.push(body(b"set ctl\x01key 0 0 2\r\nhi\r\nget ctl\x01key\r\n".to_vec()));
    // A seeded mix to the end.
    let mut x: u64 = 12345;
    for _ in 0..40 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = (x >> 33) % 16;
        match (x >> 40) % 4 {
            0 => r.push(body(set(&format!("m{k}"), (x >> 20) as u32 % 100, &value(x, ((x >> 45) % 5200) as usize), false))),
            1 => r.push(body(format!("get m{k} m{} k{}\r\n", (k + 1) % 16, k % 13).into_bytes())),
            2 => r.push(body(format!("delete m{k}\r\n").into_bytes())),
            _ => r.push(body(format!("get m{k}\r\n").into_bytes())),
        }
    }
    r
}

#[test]
fn same_responses_as_real_memcached() {
    let (_server, sock, _port) = start_memcached();
    let mut store = Store::new(StoreConfig {
        buckets: 1024,
        items: 4096,
        value_limit: ValueLimit::MemcachedItemBytes(8192),
        ..StoreConfig::default()
    })
    .unwrap();
    let mut out = Datagrams::new();
    let reqs = requests();
    assert!(reqs.len() >= 100, "{} requests", reqs.len());
    let mut multi = 0;
    for (i, (raw, body)) in reqs.iter().enumerate() {
        let req = if *raw { body.clone() } else { frame(i as u16 + 1, body) };
        store.handle_datagram(&req, &mut out, &mut ());
        let ours: Vec<Vec<u8>> = out.iter().map(|d| d.to_vec()).collect();
        let theirs = exchange(&sock, &req, ours.len());
        let join = |v: &[Vec<u8>]| -> String {
            let data: Vec<u8> = v.iter().flat_map(|d| d.get(8..).unwrap_or(&[]).to_vec()).collect();
            String::from_utf8_lossy(&data).chars().take(300).collect()
        };
        let hdrs = |v: &[Vec<u8>]| -> Vec<Vec<u8>> { v.iter().map(|d| d[..8.min(d.len())].to_vec()).collect() };
        assert_eq!(
            ours,
            theirs,
            "request {i} {:?}:\n ours   {:?} {:?}\n theirs {:?} {:?}",
            String::from_utf8_lossy(&req[..req.len().min(80)]),
            hdrs(&ours),
            join(&ours),
            hdrs(&theirs),
            join(&theirs)
        );
        multi += (ours.len() > 1) as usize;
    }
    assert!(multi >= 10, "the sequence exercises multi-datagram responses ({multi})");
    let s = store.stats();
    assert!(s.get_hits > 20 && s.get_misses > 10 && s.too_large >= 3 && s.client_errors >= 5, "{s:?}");
}
