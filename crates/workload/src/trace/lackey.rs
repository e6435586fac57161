//! Streaming conversion of `valgrind --tool=lackey --trace-mem=yes` output.
//!
//! Lackey prints one line per instruction (`I  addr,size`) and one per data reference
//! (` L addr,size`, ` S addr,size`, ` M addr,size`), plus valgrind's own `==pid== ...` lines.
//! A run of a small program is tens of millions of lines, so the parser works on bytes in a
//! large buffer it owns (no `String` per line, no UTF-8 check) with table-driven hex parsing.
//!
//! Each data reference becomes one [`Record::Access`] whose `icount` counts the `I` lines since
//! the previous record: the instruction that makes the reference is counted with it, and a
//! second reference of the same instruction gets 0. `M` (read-modify-write) is one `Modify`
//! record. Instructions after the last reference become a final [`Record::Instructions`].
//!
//! Lackey does not say which thread made a reference (valgrind runs threads one at a time), so
//! all records go to one thread: the process id from the `==pid==` lines, or 0 if there are none.

use super::Error;
use std::io::Read;
use tracefmt::{AccessKind, Record};

/// Size of the parse buffer. Large reads keep the pipe from valgrind drained in few syscalls.
const BUF_BYTES: usize = 1 << 20;

/// The longest line we accept; valgrind's own messages can be long, data lines are ~20 bytes.
const MAX_LINE: usize = 64 << 10;

/// Hex digit values, 0xff for anything else.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// What a conversion saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LackeyStats {
    pub lines: u64,
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    /// The process id of the `==pid==` lines, if any.
    pub pid: Option<u32>,
    /// Whether an instruction at the `watch_pc` given to [`convert`] ran.
    pub watch_seen: bool,
}

impl LackeyStats {
    /// Data references (a modify counts once).
    pub fn references(&self) -> u64 {
        self.loads + self.stores + self.modifies
    }
}

/// Parses `addr,size` at `data[p..]`, in one pass: hex digits, a comma, decimal digits, then
/// the end of the line (a newline, or `limit`, the end of the complete lines). Returns the
/// address, the size and the index of the line's end, or `None` if the line is malformed.
#[inline(always)]
fn parse_addr_size(data: &[u8], mut p: usize, limit: usize) -> Option<(u64, u64, usize)> {
    let start = p;
    let mut addr: u64 = 0;
    while p < limit {
        let d = HEX[data[p] as usize];
        if d == 0xff {
            break;
        }
        addr = (addr << 4) | d as u64;
        p += 1;
    }
    let digits = p - start;
    if digits == 0 || digits > 16 || p >= limit || data[p] != b',' {
        return None;
    }
    p += 1;
    let sstart = p;
    let mut size: u64 = 0;
    while p < limit && data[p].is_ascii_digit() {
        size = size * 10 + (data[p] - b'0') as u64;
        p += 1;
        if p - sstart > 6 {
            return None;
        }
    }
    if p == sstart || (p < limit && data[p] != b'\n') {
        return None;
    }
    Some((addr, size, p))
}

/// The end of the line starting at `p`: the index of its newline, or `limit`.
fn line_end(data: &[u8], p: usize, limit: usize) -> usize {
    data[p..limit]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(limit, |i| p + i)
}

fn describe(line: &[u8]) -> String {
    let shown = &line[..line.len().min(80)];
    format!("{:?}", String::from_utf8_lossy(shown))
}

/// Parses `==1234==` at the start of a line.
fn parse_pid(line: &[u8]) -> Option<u32> {
    let rest = line.strip_prefix(b"==")?;
    let end = rest.iter().position(|&b| b == b'=')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// Converts lackey text from `input` into records handed to `sink(tid, record)`, streaming:
/// memory use is one buffer whatever the input size. `source` names the input in errors
/// (`x.lackey:17: ...`). A malformed line is an error naming its line number. `watch_pc`, if
/// given, is an instruction address whose execution is reported in
/// [`LackeyStats::watch_seen`]: the recorder uses it to confirm the load bias by watching for
/// the program's entry point.
pub fn convert<R: Read, F>(
    mut input: R,
    source: &str,
    watch_pc: Option<u64>,
    mut sink: F,
) -> Result<LackeyStats, Error>
where
    F: FnMut(u32, &Record) -> Result<(), Error>,
{
    let mut stats = LackeyStats::default();
    let mut buf = vec![0u8; BUF_BYTES];
    // Bytes buf[..filled] are valid; buf[..start] were parsed.
    let mut filled = 0usize;
    let mut pending: u64 = 0; // instructions since the last record
    let mut tid: Option<u32> = None;
    let mut line_no: u64 = 0;
    let mut eof = false;
    let bad = |line_no: u64, what: String| Error::Parse {
        source: source.to_string(),
        line: line_no,
        what,
    };
    loop {
        // Fill the buffer.
        if !eof {
            while filled < buf.len() {
                match input.read(&mut buf[filled..]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => {
                        filled += n;
                        // Parse as soon as we hold a good amount: keeps a pipe moving.
                        if filled >= buf.len() / 2 {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(Error::Io {
                            path: source.to_string(),
                            err: e,
                        })
                    }
                }
            }
        }
        if filled == 0 && eof {
            break;
        }
        // The part with complete lines; at EOF a last line without newline is complete too.
        let complete = match buf[..filled].iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if eof => filled,
            None => {
                if filled >= MAX_LINE.min(buf.len()) {
                    return Err(bad(
                        line_no + 1,
                        format!("line longer than {MAX_LINE} bytes"),
                    ));
                }
                continue;
            }
        };
        let data = &buf[..complete];
        let mut p = 0usize;
        // One pass over each line: the parsers stop at its newline and return its index.
        while p < complete {
            line_no += 1;
            let malformed = |what: &str, p: usize| {
                let line = &data[p..line_end(data, p, complete)];
                bad(line_no, format!("{what} {}", describe(line)))
            };
            let end = match data[p] {
                b'I' => {
                    let parsed = if data.get(p + 1..p + 3) == Some(b"  ") {
                        parse_addr_size(data, p + 3, complete)
                    } else {
                        None
                    };
                    let Some((pc, _, end)) = parsed else {
                        return Err(malformed("malformed instruction line", p));
                    };
                    if Some(pc) == watch_pc {
                        stats.watch_seen = true;
                    }
                    pending += 1;
                    end
                }
                b' ' => {
                    let kind = match data.get(p + 1) {
                        Some(b'L') => AccessKind::Load,
                        Some(b'S') => AccessKind::Store,
                        Some(b'M') => AccessKind::Modify,
                        _ => return Err(malformed("unknown line", p)),
                    };
                    let parsed = if data.get(p + 2) == Some(&b' ') {
                        parse_addr_size(data, p + 3, complete)
                    } else {
                        None
                    };
                    let Some((addr, size, end)) = parsed else {
                        return Err(malformed("malformed data reference", p));
                    };
                    if size == 0 || size > 255 {
                        return Err(bad(
                            line_no,
                            format!("access size {size} is outside 1..=255"),
                        ));
                    }
                    match kind {
                        AccessKind::Load => stats.loads += 1,
                        AccessKind::Store => stats.stores += 1,
                        AccessKind::Modify => stats.modifies += 1,
                        AccessKind::Code => unreachable!("lackey's L, S and M lines only"),
                    }
                    stats.instructions += pending;
                    let t = *tid.get_or_insert(0);
                    if pending > u32::MAX as u64 {
                        sink(t, &Record::Instructions(pending))?;
                        pending = 0;
                    }
                    sink(
                        t,
                        &Record::Access {
                            kind,
                            addr,
                            size: size as u8,
                            icount: pending as u32,
                        },
                    )?;
                    pending = 0;
                    end
                }
                b'=' => {
                    // valgrind's own messages; the first gives the process id.
                    let end = line_end(data, p, complete);
                    if let (None, Some(pid)) = (tid, parse_pid(&data[p..end])) {
                        tid = Some(pid);
                        stats.pid = Some(pid);
                    }
                    end
                }
                b'\n' => p,
                b'\r' if p + 1 == complete || data[p + 1] == b'\n' => p + 1,
                _ => return Err(malformed("unknown line", p)),
            };
            p = end + 1;
        }
        // Keep the incomplete tail for the next read.
        let tail = filled - complete.min(filled);
        buf.copy_within(complete.min(filled)..filled, 0);
        filled = tail;
        if eof && filled == 0 {
            break;
        }
    }
    stats.lines = line_no;
    if pending > 0 {
        stats.instructions += pending;
        sink(tid.unwrap_or(0), &Record::Instructions(pending))?;
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<(LackeyStats, Vec<(u32, Record)>), Error> {
        let mut out = Vec::new();
        let s = convert(text.as_bytes(), "t.lackey", Some(0x040010a7), |t, r| {
            out.push((t, *r));
            Ok(())
        })?;
        Ok((s, out))
    }

    const SAMPLE: &str = "\
==4242== Lackey, an example Valgrind tool
==4242== Command: ./a.out
I  04001090,3
 S 1ffefffd48,8
I  04001093,5
I  04001098,4
 L 00404018,4
 L 0040401c,1
I  0400109c,7
 M 00404020,2
I  040010a3,4
 L 1ffefffd40,16
 S 1ffefffd40,16
I  040010a7,3
I  040010aa,3
 L 7fffabc0,10
==4242== 
==4242== Counted 1 call to main()
I  040010ad,2
";

    #[test]
    fn known_sample() {
        let (s, recs) = run(SAMPLE).unwrap();
        assert_eq!(s.pid, Some(4242));
        assert!(s.watch_seen);
        assert_eq!((s.loads, s.stores, s.modifies), (4, 2, 1));
        assert_eq!(s.instructions, 8);
        assert_eq!(s.lines, 19);
        let acc = |kind, addr, size, icount| {
            (
                4242,
                Record::Access {
                    kind,
                    addr,
                    size,
                    icount,
                },
            )
        };
        use AccessKind::*;
        assert_eq!(
            recs,
            vec![
                acc(Store, 0x1ffefffd48, 8, 1),
                acc(Load, 0x404018, 4, 2),
                acc(Load, 0x40401c, 1, 0),
                acc(Modify, 0x404020, 2, 1),
                acc(Load, 0x1ffefffd40, 16, 1),
                acc(Store, 0x1ffefffd40, 16, 0),
                acc(Load, 0x7fffabc0, 10, 2),
                (4242, Record::Instructions(1)),
            ]
        );
    }

    #[test]
    fn sizes_one_to_sixteen_and_buffer_boundaries() {
        // Enough lines to cross several buffer refills, with every size 1..=16.
        let mut text = String::new();
        let n = 200_000u64;
        for i in 0..n {
            text.push_str(&format!(
                "I  {:08x},4\n L {:x},{}\n",
                0x400000 + i,
                0x10000 + i * 8,
                i % 16 + 1
            ));
        }
        let (s, recs) = run(&text).unwrap();
        assert_eq!(s.loads, n);
        assert_eq!(s.instructions, n);
        assert_eq!(recs.len() as u64, n);
        for (i, (_, r)) in recs.iter().enumerate() {
            let i = i as u64;
            assert_eq!(
                *r,
                Record::Access {
                    kind: AccessKind::Load,
                    addr: 0x10000 + i * 8,
                    size: (i % 16 + 1) as u8,
                    icount: 1
                }
            );
        }
    }

    #[test]
    fn no_trailing_newline_and_no_pid() {
        let (s, recs) = run("I  0400,1\n S ff,4").unwrap();
        assert_eq!(s.pid, None);
        assert_eq!(
            recs,
            vec![(
                0,
                Record::Access {
                    kind: AccessKind::Store,
                    addr: 0xff,
                    size: 4,
                    icount: 1
                }
            )]
        );
    }

    #[test]
    fn garbage_never_panics() {
        // Seeded mutations of a valid sample: every outcome is Ok or an error with a line.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"IL SM,=0123456789abcdefxZ\n\r ";
        for _ in 0..2000 {
            let mut text = SAMPLE.as_bytes().to_vec();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x % text.len() as u64) as usize;
                text[at] = alphabet[((x >> 32) % alphabet.len() as u64) as usize];
            }
            match convert(&text[..], "t.lackey", None, |_, _| Ok(())) {
                Ok(_) => {}
                Err(e) => assert!(e.to_string().starts_with("t.lackey:"), "{e}"),
            }
        }
    }

    #[test]
    fn malformed_lines_name_their_line() {
        for (text, line, needle) in [
            ("I  0400,1\n X 10,4\n", 2, "unknown line"),
            (
                "I  0400,1\nI  0401,1\n L 10g,4\n",
                3,
                "malformed data reference",
            ),
            (" L 10,\n", 1, "malformed"),
            (" S 10,0\n", 1, "size 0"),
            (" S 10,300\n", 1, "size 300"),
            ("I 0400,1\n", 1, "malformed instruction"),
            ("==1== x\nhello\n", 2, "unknown line \"hello\""),
            (" L 11112222333344445,8\n", 1, "malformed"),
        ] {
            let e = run(text).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("t.lackey:{line}: ")),
                "{text:?}: {msg}"
            );
            assert!(msg.contains(needle), "{text:?}: {msg}");
        }
    }
}
