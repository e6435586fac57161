//! MAGIC's protocol processor (PP) running handlers as instruction sequences (seed 004, 3.1.1
//! and 3.1.3; issue 20 item 1): a handler's latency (first instruction to its last send) and
//! occupancy (first instruction to the switch that loads the next handler) are *measured* by
//! scheduling the instructions of the path the handler takes, not configured.
//!
//! # The machine (seed 004, 3.1.1)
//! "The PP is implemented as a dual-issue 64-bit machine with static scheduling. It fetches a
//! pair of instructions on every PP cycle ... The PP also does not support pipeline interlocks
//! or most types of resource conflict detection, so the PP programmer or compiler must avoid
//! these statically." Its handlers are compiled by gcc and scheduled by twine (3.2.1). The
//! model is that schedule:
//!
//! - **Issue**: two instructions per cycle, at most one of them a memory access (load or store:
//!   one data-cache port) and at most one a control instruction (branch, send, switch).
//! - **Latencies** (a dependent instruction waits; without interlocks, the compiler leaves
//!   the slots in between empty or fills them with independent work): ALU and bit-field
//!   results are available the next cycle; a load's result two cycles after it issues (the PP's
//!   data cache is the off-chip 1 MB cache, 3.1.1). Choice: the seed gives no latencies.
//! - **Static scheduling** (twine): each instruction, in program order, goes to the earliest
//!   cycle where its operands are ready and a slot is free, so later independent instructions
//!   fill earlier empty slots; nothing moves above a branch taken before it on the path, a
//!   branch does not issue before any instruction ahead of it, sends stay in order, and stores
//!   stay in order. The switch issues after every other instruction.
//! - **Paths**: a handler's instruction sequence is the path through its branches that the
//!   directory state selects (Pending, Dirty, the sharer list's length, whether a copy must be
//!   invalidated, whether a reply is held for acknowledgements); per-sharer work is a loop,
//!   unrolled on the path.
//! - **FlashPoint** (3.1.3, Figures 3 and 4) is added instructions on the same paths: the home's
//!   request handlers copy the bin and warm bit into the reply header before the send and set
//!   the warm bit after it; a handler that hands a miss's reply to the processor reads the
//!   latency counter and updates the record after the send (Figure 3); an invalidation marks
//!   the line in the node's table. They fill empty slots where they can ("some of the
//!   FlashPoint code added to each handler fills otherwise-empty slots", 3.1.1); the rest
//!   lengthens the handler.
//!
//! Latency = cycle of the last send + 1, occupancy = cycle of the switch + 1 (cycle 0 is the
//! handler's first instruction), in PP (= system) cycles, as the seed's Table 4 measures them.

use crate::flash::handlers::Handler;

/// A register of the handler (the names document the sequences; any distinct ids work).
type Reg = u8;
/// The message's address and header (in registers when the handler starts: the inbox
/// dispatched it, 3.1.1).
const ADDR: Reg = 0;
const MSG: Reg = 1;
/// The bin table / current procedure pointer (a register, 3.1.3 "stored in a register").
const PROCPTR: Reg = 2;
const HA: Reg = 3; // directory header address
const H: Reg = 4; // directory header
const R: Reg = 5; // outgoing message header
const T: Reg = 6; // scratch
const U: Reg = 7;
const P: Reg = 8; // pointer / link cell
const BIN: Reg = 9;
const WARM: Reg = 10;
const LAT: Reg = 11;
const BA: Reg = 12; // record address
const C: Reg = 13; // a counter being updated
const N: Reg = 14; // node tables entry
const REGS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Alu,
    Load,
    Store,
    Branch,
    Send,
}

#[derive(Clone, Copy, Debug)]
struct Ins {
    op: Op,
    dst: Option<Reg>,
    src: [Option<Reg>; 3],
}

/// The state a handler run's path depends on (derived from the directory header before the
/// run and what the run sent; `flash::FlashSys::run_pp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Path {
    /// A home request that found Pending set: NACKed.
    pub nack: bool,
    /// A home request that found the line dirty elsewhere: forwarded to the owner.
    pub forward: bool,
    /// The line had sharers (header pointer or local copy) before a clean home request.
    pub had_sharers: bool,
    /// Sharer-list entries walked.
    pub walked: u32,
    /// Invalidations sent.
    pub invals: u32,
    /// A reply goes to this node's processor.
    pub to_proc: bool,
    /// Messages sent to the network.
    pub net_sends: u32,
    /// FlashPoint: the handler copies bin and warm bit into the reply (a home request served).
    pub fp_home: bool,
    /// FlashPoint: the handler completes a miss and updates its record (Figure 3).
    pub fp_record: bool,
    /// FlashPoint: the handler marks invalidated lines in the node's table.
    pub fp_mark: bool,
}

impl Path {
    /// A key for memoizing the schedule of `(handler, path)`.
    pub fn key(&self) -> u64 {
        (self.nack as u64)
            | (self.forward as u64) << 1
            | (self.had_sharers as u64) << 2
            | (self.to_proc as u64) << 3
            | (self.fp_home as u64) << 4
            | (self.fp_record as u64) << 5
            | (self.fp_mark as u64) << 6
            | (self.net_sends.min(255) as u64) << 8
            | (self.walked.min(0xFFFF) as u64) << 16
            | (self.invals.min(0xFFFF) as u64) << 32
    }
}

/// A handler's instruction sequence under construction.
#[derive(Default)]
struct Seq(Vec<Ins>);

impl Seq {
    fn push(&mut self, op: Op, dst: Option<Reg>, s: &[Reg]) {
        let mut src = [None; 3];
        for (i, r) in s.iter().take(3).enumerate() {
            src[i] = Some(*r);
        }
        self.0.push(Ins { op, dst, src });
    }
    fn alu(&mut self, d: Reg, s: &[Reg]) {
        self.push(Op::Alu, Some(d), s)
    }
    fn ld(&mut self, d: Reg, s: &[Reg]) {
        self.push(Op::Load, Some(d), s)
    }
    fn st(&mut self, s: &[Reg]) {
        self.push(Op::Store, None, s)
    }
    fn br(&mut self, s: &[Reg]) {
        self.push(Op::Branch, None, s)
    }
    fn send(&mut self, s: &[Reg]) {
        self.push(Op::Send, None, s)
    }

    /// The directory header's address from the line address (shift, add) and its load.
    fn header(&mut self) {
        self.alu(HA, &[ADDR]);
        self.alu(HA, &[HA]);
        self.ld(H, &[HA]);
    }
    /// An outgoing header built from the incoming one (destination, type, length).
    fn reply_header(&mut self) {
        self.alu(R, &[MSG]);
        self.alu(R, &[R]);
        self.alu(R, &[R]);
    }
    /// Header flag updates and the store of the header.
    fn update_header(&mut self, fields: usize) {
        for _ in 0..fields {
            self.alu(H, &[H]);
        }
        self.st(&[HA, H]);
    }
    /// Allocates a pointer/link-store cell for a new sharer (dynamic pointer allocation,
    /// seed 3.1.2): load the free-list head, its successor, write the cell, link it.
    fn alloc_cell(&mut self) {
        self.ld(P, &[PROCPTR]);
        self.ld(T, &[P]);
        self.alu(U, &[H]);
        self.st(&[P, U]);
        self.st(&[T]);
        self.alu(H, &[H, P]);
    }
    /// Walks `n` sharer-list entries, sending an invalidation for `inv` of them and freeing
    /// the cells (a loop; each iteration loads the next link).
    fn walk(&mut self, n: u32, inv: u32) {
        self.alu(P, &[H]);
        for i in 0..n {
            self.ld(T, &[P]);
            self.alu(U, &[T]);
            if i < inv {
                self.alu(R, &[U, MSG]);
                self.send(&[R, ADDR]);
            }
            self.st(&[P]);
            self.alu(P, &[T]);
            self.br(&[P]);
        }
    }
    /// FlashPoint, Figure 4: the bin and warm bit copied from the header into the reply.
    fn fp_copy(&mut self) {
        self.alu(BIN, &[H]);
        self.alu(WARM, &[H]);
        self.alu(R, &[R, BIN]);
        self.alu(R, &[R, WARM]);
    }
    /// FlashPoint, Figure 3: after the send, read the latency counter and update the record
    /// of (current procedure, bin): two counters and the cold count when the warm bit is clear.
    fn fp_record(&mut self, bin_from: Reg) {
        self.ld(LAT, &[]);
        self.alu(BIN, &[bin_from]);
        self.alu(WARM, &[bin_from]);
        self.alu(BA, &[BIN]);
        self.alu(BA, &[BA, PROCPTR]);
        self.ld(C, &[BA]);
        self.alu(C, &[C]);
        self.st(&[BA, C]);
        self.ld(C, &[BA]);
        self.alu(C, &[C, LAT]);
        self.st(&[BA, C]);
        self.br(&[WARM]);
        self.ld(C, &[BA]);
        self.alu(C, &[C]);
        self.st(&[BA, C]);
    }
    /// FlashPoint: mark an invalidated line in the node's table (hash, store).
    fn fp_mark(&mut self) {
        self.alu(N, &[ADDR]);
        self.alu(N, &[N, PROCPTR]);
        self.st(&[N, ADDR]);
    }
}

/// The instruction sequence of `h` on `path`.
fn sequence(h: Handler, p: &Path) -> Seq {
    use Handler::*;
    let mut s = Seq::default();
    match h {
        PILocalGet | PILocalGetX | PILocalUpgrade | NILocalGet | NILocalGetX | NILocalUpgrade => {
            let remote_req = matches!(h, NILocalGet | NILocalGetX | NILocalUpgrade);
            let exclusive = !matches!(h, PILocalGet | NILocalGet);
            // A local request served here whose reply goes to this node's processor in this
            // handler: the record update after the send (Figure 3's code) takes the bin and
            // warm bit from the header in its register, so nothing is copied into the reply
            // before the send. The copy (Figure 4) is for a reply another handler completes:
            // a remote requester's `NIRemotePut`, a forwarded owner's reply, or a reply held
            // for invalidation acknowledgements. This is why the seed's Table 4 finds
            // PILocalGet's latency unchanged under FlashPoint (9 -> 9 in every kernel).
            let record_here = !remote_req && !p.forward && p.fp_record;
            s.header();
            s.br(&[H]); // Pending?
            if p.nack {
                s.reply_header();
                s.send(&[R, ADDR]);
            } else {
                s.br(&[H]); // Dirty?
                if p.forward {
                    s.alu(U, &[H]); // the owner
                    s.alu(R, &[MSG, U]);
                    s.alu(R, &[R]);
                    if p.fp_home {
                        s.fp_copy();
                    }
                    s.send(&[R, ADDR]);
                    s.update_header(1); // Pending
                } else {
                    s.br(&[H]); // HeadPtr / sharers?
                    if remote_req {
                        s.reply_header();
                    } else {
                        s.alu(R, &[ADDR]);
                        s.alu(R, &[R]);
                    }
                    if p.fp_home && !record_here {
                        s.fp_copy();
                    }
                    if exclusive {
                        // Invalidate the sharers, then the data (or ownership) reply with
                        // the count of acknowledgements to collect.
                        if p.had_sharers {
                            s.walk(p.walked, p.invals);
                            s.alu(R, &[R]);
                        }
                        s.send(&[R, ADDR]);
                        s.update_header(3); // Dirty, owner pointer, list cleared
                    } else {
                        s.send(&[R, ADDR]);
                        if p.had_sharers && remote_req {
                            s.alloc_cell();
                        }
                        s.update_header(2); // pointer / HeadPtr or Local
                    }
                    if p.fp_home {
                        s.alu(H, &[H]); // set the warm bit (Figure 4)
                    }
                }
            }
            if p.fp_record {
                s.fp_record(if record_here { H } else { R });
            }
        }
        PIRemoteGet | PIRemoteGetX | PIRemoteUpgrade | PIRemotePut => {
            // Pass-through: home node from the address, request header, send.
            s.alu(U, &[ADDR]);
            s.alu(R, &[MSG, U]);
            s.alu(R, &[R]);
            s.send(&[R, ADDR]);
        }
        PILocalPut | NILocalPut => {
            s.header();
            s.br(&[H]); // from the owner?
            s.update_header(2); // Dirty, Local cleared
            s.reply_header();
            s.send(&[R, ADDR]);
        }
        PIInvalAck => {
            // Find the requester in the node's invalidation table, send it the ack.
            s.alu(N, &[ADDR]);
            s.ld(U, &[N]);
            s.alu(R, &[U, MSG]);
            s.send(&[R, ADDR]);
            s.st(&[N]);
        }
        PILocalInterventionReply | NILocalSWB | NILocalOwnXfer | NILocalFwdMiss => {
            // The home completes a forwarded transaction: clear Pending, rewrite the sharers,
            // send the data on.
            s.header();
            s.br(&[H]);
            if h == PILocalInterventionReply || h == NILocalFwdMiss {
                s.reply_header();
            }
            if p.walked > 0 {
                s.walk(p.walked, 0);
            }
            for _ in 0..p.net_sends + p.to_proc as u32 {
                s.alu(R, &[MSG]);
                s.send(&[R, ADDR]);
            }
            s.update_header(3);
            if p.fp_record {
                s.fp_record(MSG);
            }
        }
        PIRemoteInterventionReply => {
            // The owner answers a forwarded request: data to the requester and the sharing
            // write-back or ownership transfer to the home.
            s.alu(N, &[ADDR]);
            s.ld(U, &[N]);
            for _ in 0..p.net_sends {
                s.alu(R, &[U, MSG]);
                s.send(&[R, ADDR]);
            }
            s.st(&[N]);
        }
        NIRemotePut | NIRemotePutX | NIRemoteUpgradeAck | NIRemotePutAck | NINack => {
            // Figure 3: a PISend; exclusive replies check the acknowledgement count first.
            if matches!(h, NIRemotePutX | NIRemoteUpgradeAck) {
                s.ld(N, &[PROCPTR]);
                s.alu(U, &[N, MSG]);
                s.br(&[U]);
                if !p.to_proc {
                    s.st(&[PROCPTR, MSG]); // hold the reply until the acks are in
                }
            }
            if p.to_proc {
                s.alu(R, &[MSG]);
                s.send(&[R, ADDR]);
            }
            if p.fp_record {
                s.fp_record(MSG);
            }
        }
        NIInvalAck => {
            s.ld(N, &[PROCPTR]);
            s.alu(N, &[N]);
            s.st(&[PROCPTR, N]);
            s.br(&[N]); // all in?
            if p.to_proc {
                s.ld(U, &[PROCPTR]);
                s.alu(R, &[U]);
                s.send(&[R, ADDR]);
            }
            if p.fp_record {
                s.fp_record(U);
            }
        }
        NIInval => {
            s.alu(N, &[ADDR]);
            s.st(&[N, MSG]); // remember the requester to acknowledge
            s.alu(R, &[MSG]);
            s.send(&[R, ADDR]);
        }
        PIUncached => {
            s.alu(R, &[MSG]);
            s.send(&[R, ADDR]);
        }
        NIRemoteGetFwd | NIRemoteGetXFwd => {
            s.alu(N, &[ADDR]);
            s.st(&[N, MSG]); // the forwarded request, for the intervention reply
            s.alu(R, &[MSG]);
            s.send(&[R, ADDR]);
        }
        FPBinAssign | FPProcDelta | FPRecordRead => {
            unreachable!("FlashPoint's command handlers are costed by `[flash.flashpoint]`")
        }
    }
    if p.fp_mark {
        s.fp_mark();
    }
    s
}

/// Schedules `seq` on the dual-issue PP: (latency, occupancy) in PP cycles.
fn schedule(seq: &Seq) -> (u32, u32) {
    // Per cycle: instructions issued, a memory op issued, a control op issued.
    let mut slots: Vec<(u8, bool, bool)> = Vec::new();
    let mut ready = [0u32; REGS];
    let (mut barrier, mut last, mut last_send, mut last_store) = (0u32, 0u32, None, 0u32);
    for ins in &seq.0 {
        let mut c = ins
            .src
            .iter()
            .flatten()
            .map(|&r| ready[r as usize])
            .max()
            .unwrap_or(0)
            .max(barrier);
        let (mem, ctl) = match ins.op {
            Op::Load => (true, false),
            Op::Store => {
                c = c.max(last_store);
                (true, false)
            }
            Op::Alu => (false, false),
            Op::Branch => {
                c = c.max(last);
                (false, true)
            }
            Op::Send => {
                c = c.max(last_send.map_or(0, |s: u32| s + 1));
                (false, true)
            }
        };
        loop {
            if slots.len() <= c as usize {
                slots.resize(c as usize + 1, (0, false, false));
            }
            let s = slots[c as usize];
            if s.0 < 2 && !(mem && s.1) && !(ctl && s.2) {
                break;
            }
            c += 1;
        }
        let s = &mut slots[c as usize];
        s.0 += 1;
        s.1 |= mem;
        s.2 |= ctl;
        last = last.max(c);
        match ins.op {
            Op::Branch => barrier = c + 1,
            Op::Send => last_send = Some(c),
            Op::Store => last_store = c,
            _ => {}
        }
        if let Some(d) = ins.dst {
            ready[d as usize] = c + if ins.op == Op::Load { 2 } else { 1 };
        }
    }
    // The switch: a control instruction after every other one.
    let mut sw = last;
    while slots.get(sw as usize).is_some_and(|s| s.0 >= 2 || s.2) {
        sw += 1;
    }
    let latency = last_send.map_or(sw + 1, |s| s + 1);
    (latency, sw + 1)
}

/// (latency, occupancy) of handler `h` on `path`, in PP cycles.
pub fn cost(h: Handler, path: &Path) -> (u32, u32) {
    schedule(&sequence(h, path))
}

/// Instructions on the path (for tests and the docs).
pub fn instructions(h: Handler, path: &Path) -> usize {
    sequence(h, path).0.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dual-issue rule on a hand-scheduled sequence: header address (2 dependent ALU ops:
    /// cycles 0, 1), load (cycle 2, result at 4), branch (4), send (5: the branch holds later
    /// instructions); the switch needs the control unit the send used, so cycle 6: 6/7.
    #[test]
    fn schedule_follows_the_dual_issue_rule() {
        let mut s = Seq::default();
        s.header();
        s.br(&[H]);
        s.send(&[R, ADDR]);
        assert_eq!(schedule(&s), (6, 7));
        // An independent ALU op after the send fills an empty slot: nothing moves.
        s.alu(T, &[ADDR]);
        assert_eq!(schedule(&s), (6, 7));
        // Two loads cannot pair (one memory port); two ALU ops can.
        let mut s = Seq::default();
        s.ld(T, &[ADDR]);
        s.ld(U, &[ADDR]);
        s.alu(P, &[ADDR]);
        s.alu(C, &[ADDR]);
        s.send(&[T, U]);
        // loads at 0 and 1, ALUs at 0 and 1, send when U is ready (1 + 2).
        assert_eq!(schedule(&s), (4, 5));
    }

    /// Paths depend on directory state: NILocalGet is longer with sharers than without
    /// (a link cell, after the send: occupancy only), a NACK is shorter, and FlashPoint's
    /// added instructions lengthen the occupancy more than the latency (Table 4's shape).
    #[test]
    fn paths_and_flashpoint_change_the_cost() {
        let clean = Path::default();
        let shared = Path {
            had_sharers: true,
            walked: 1,
            ..Path::default()
        };
        let nack = Path {
            nack: true,
            ..Path::default()
        };
        let (l0, o0) = cost(Handler::NILocalGet, &clean);
        let (l1, o1) = cost(Handler::NILocalGet, &shared);
        let (ln, on) = cost(Handler::NILocalGet, &nack);
        assert_eq!(l1, l0, "the sharer is linked after the send");
        assert!(o1 > o0, "{o1} vs {o0}");
        assert!(ln < l0 && on < o0);
        let fp = Path {
            fp_home: true,
            ..clean
        };
        let (lf, of) = cost(Handler::NILocalGet, &fp);
        assert!(lf >= l0 && of > o0 && of - o0 >= lf - l0);
        // Invalidations: each sharer adds a loop iteration.
        let inv = |n| {
            cost(
                Handler::NILocalGetX,
                &Path {
                    had_sharers: true,
                    walked: n,
                    invals: n,
                    ..Path::default()
                },
            )
        };
        assert!(inv(4).0 > inv(1).0 && inv(4).1 > inv(1).1);
    }

    /// Seed 004, Table 4: PILocalGet's latency is the same under FlashPoint (9/11 -> 9/21 in
    /// FFT, LU and OCEAN, 11/13 -> 11/18 in RADIX) while its occupancy grows: the record is
    /// updated after the send from the header in its register. A local read that was
    /// forwarded to a dirty owner still copies the bin into the forwarded request, before
    /// the send, for the owner's reply to carry.
    #[test]
    fn a_local_read_served_at_home_keeps_its_latency_under_flashpoint() {
        let dp = Path {
            to_proc: true,
            ..Path::default()
        };
        let fp = Path {
            fp_home: true,
            fp_record: true,
            ..dp
        };
        let (l_dp, o_dp) = cost(Handler::PILocalGet, &dp);
        let (l_fp, o_fp) = cost(Handler::PILocalGet, &fp);
        assert_eq!((l_dp, o_dp), (10, 11));
        assert_eq!((l_fp, o_fp), (10, 23));
        let fwd = |fp_home| {
            cost(
                Handler::PILocalGet,
                &Path {
                    forward: true,
                    fp_home,
                    ..Path::default()
                },
            )
        };
        assert!(
            fwd(true).0 > fwd(false).0,
            "{:?} vs {:?}",
            fwd(true),
            fwd(false)
        );
        // A remote read's reply is completed by the requester's NIRemotePut: copied before.
        let ni = cost(Handler::NILocalGet, &Path::default());
        let ni_fp = cost(
            Handler::NILocalGet,
            &Path {
                fp_home: true,
                ..Path::default()
            },
        );
        assert!(ni_fp.0 > ni.0, "{ni_fp:?} vs {ni:?}");
    }
}
