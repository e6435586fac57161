//! SPLASH-2 FFT: a complex 1-D FFT of n = 2^m points (m even) by the radix-√n six-step
//! algorithm (Bailey), as in SPLASH-2's `fft.C` [WOT+95]; the FlashPoint study runs 256K points
//! (seed 004, section 3.2.1).
//!
//! The n points are a √n x √n matrix of complex doubles stored row by row, each row padded by one
//! 64-byte line (SPLASH's `pad_length`, there one cache line of the `-l` option). Processor `p`
//! owns rows `[p √n/P, (p+1) √n/P)` of every matrix. `FFT1D` is, per direction:
//!
//! 1. `Transpose` `x` into `trans`: blocked, each processor gathering its rows' columns from every
//!    other processor's band, starting with the next processor (staggered, as SPLASH does) —
//!    the all-to-all communication of FFT;
//! 2. per own row: `FFT1DOnce` (bit `Reverse` then radix-2 butterflies with the roots of unity
//!    of size √n, read from the private copy `upriv` of `umain`) and `TwiddleOneCol` (multiplies
//!    by the twiddles `umain2`, n entries laid out like `x`);
//! 3. barrier, `Transpose` `trans` into `x`, `FFT1DOnce` on own rows (`Scale` by 1/n if inverse);
//! 4. barrier, `Transpose` `x` into `trans`, barrier, `CopyColumn` `trans` into `x`, barrier.
//!
//! As SPLASH-2 with `-t`, the program runs the forward then the inverse transform, so the result
//! can be checked as a round trip (references and misses are about twice those of a forward
//! transform alone).
//!
//! Placement: `x`, `trans`, `umain2` and `upriv` are first-touch; each processor first runs
//! SPLASH's `TouchArray` over its own rows (and its `upriv`), so its band is homed on its node.
//! `umain` is written by the main process in SPLASH (`InitU`): it is homed on node 0.
//!
//! Instruction charges per element, from the inner loops of `fft.C` (approximate): butterfly
//! 10 memory refs, 11 fp (4 mul, 6 add/sub, 1 sign), 3 int, 1 branch; twiddle 4 refs + 2 loads of
//! `umain2`, 7 fp, 2 int, 1 branch; transpose 2 loads + 2 stores, 3 int, 1 branch; bit
//! reversal a call of the procedure `BitReverse` per element (as `fft.C`: the call and the
//! return, 3 int per bit) plus a swap.

use super::common::{doubles, is_pow2, max_rel_diff, phase, uniform, within};
use crate::{Array, Barrier, Ctx, Place, Procedure, Shared, Verification, Workload};
use engine::SimRng;
use machine::cpu::op::Op;
use machine::sim::Setup;
use std::cell::RefCell;
use std::f64::consts::PI;

/// Complex padding per row: one 64-byte line of 16-byte complex numbers.
const PAD: usize = 4;

/// SPLASH-2 `fft.C`'s `num_cache_lines` (its `-n` option, default `NUM_CACHE_LINES` = 65536):
/// `Transpose` cuts each processor's `rows_per` x `rows_per` block into `numblks` x `numblks`
/// sub-blocks with `numblks = ceil(2 rows_per / num_cache_lines)`. At every size we run
/// (`rows_per` <= 512) that is one sub-block, as in SPLASH-2 with its defaults.
const NUM_CACHE_LINES: usize = 65536;

/// A √n x √n complex matrix, padded rows, in host memory and at a simulated address.
struct Matrix {
    at: Array,
    v: Shared<f64>,
    stride: usize,
}

impl Matrix {
    fn new(rows: usize, stride: usize) -> Matrix {
        Matrix {
            at: doubles(0),
            v: Shared::new(2 * rows * stride, 0.0),
            stride,
        }
    }
    /// Index of the real part of element (row, col); the imaginary part follows.
    #[inline]
    fn idx(&self, row: usize, col: usize) -> usize {
        2 * (row * self.stride + col)
    }
    #[inline]
    fn load(&self, ctx: &mut Ctx, i: usize) -> (f64, f64) {
        ctx.load(self.at.at(i));
        ctx.load(self.at.at(i + 1));
        (self.v.get(i), self.v.get(i + 1))
    }
    #[inline]
    fn store(&self, ctx: &mut Ctx, i: usize, (re, im): (f64, f64)) {
        self.v.set(i, re);
        self.v.set(i + 1, im);
        ctx.store(self.at.at(i));
        ctx.store(self.at.at(i + 1));
    }
}

struct Procs {
    fft1d: Procedure,
    transpose: Procedure,
    once: Procedure,
    reverse: Procedure,
    bit_reverse: Procedure,
    twiddle: Procedure,
    scale: Procedure,
    copy: Procedure,
    touch: Procedure,
}

/// The SPLASH-2 FFT kernel.
pub struct Fft {
    m: u32,
    n: usize,
    n1: usize,
    rows_per: usize,
    x: Matrix,
    trans: Matrix,
    umain2: Matrix,
    umain: Matrix,
    upriv: Matrix,
    input: Vec<f64>,
    /// The forward transform, snapshot by thread 0 between the two directions (host only).
    forward: RefCell<Vec<f64>>,
    bar: Option<Barrier>,
    procs: Option<Procs>,
}

impl Fft {
    /// An FFT of 2^`m` points (`m` even).
    pub fn new(m: u32) -> Fft {
        let n = 1usize << m;
        let n1 = 1usize << (m / 2);
        Fft {
            m,
            n,
            n1,
            rows_per: 0,
            x: Matrix::new(0, 0),
            trans: Matrix::new(0, 0),
            umain2: Matrix::new(0, 0),
            umain: Matrix::new(0, 0),
            upriv: Matrix::new(0, 0),
            input: Vec::new(),
            forward: RefCell::new(Vec::new()),
            bar: None,
            procs: None,
        }
    }

    /// The result (natural order, interleaved re/im) currently in `x`.
    fn result(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(2 * self.n);
        for r in 0..self.n1 {
            for c in 0..self.n1 {
                let i = self.x.idx(r, c);
                out.push(self.x.v.get(i));
                out.push(self.x.v.get(i + 1));
            }
        }
        out
    }

    /// Perturbs one output element (for tests of the verification).
    pub fn corrupt(&self) {
        let i = self.x.idx(self.n1 / 2, 1);
        self.x.v.set(i, self.x.v.get(i) + 1e-3);
    }

    fn pr(&self) -> &Procs {
        self.procs.as_ref().expect("setup ran")
    }
    fn barrier(&self, ctx: &mut Ctx) {
        ctx.barrier(self.bar.expect("setup ran"));
    }

    /// SPLASH's `TouchArray`: reads own rows of every matrix (places them by first touch) and
    /// copies `umain` into this processor's `upriv`.
    fn touch_array(&self, ctx: &mut Ctx, first: usize, last: usize) {
        let me = ctx.tid();
        within(ctx, self.pr().touch, |ctx| {
            for i in 0..self.n1 {
                let u = self.umain.load(ctx, self.umain.idx(0, i));
                self.upriv.store(ctx, self.upriv.idx(me, i), u);
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
            }
            for r in first..last {
                for c in 0..self.n1 {
                    for mat in [&self.x, &self.trans, &self.umain2] {
                        ctx.load(mat.at.at(mat.idx(r, c)));
                    }
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                    ctx.branch(true);
                }
            }
        });
    }

    /// Transposes `src` into `dst` for destination rows [first, last): each processor reads a
    /// `rows_per` x `rows_per` block from every band of `src`, starting with the next processor
    /// (SPLASH's staggered order), its own band last. Loop order and sub-blocking are those of
    /// SPLASH-2 `fft.C`'s `Transpose` (`dest[2*(h*n1p+v)] = src[2*(v*n1p+h)]`, `h` innermost):
    /// the inner loop reads a row of the source (a read miss per line) and writes a column of
    /// the destination (a write miss per element until the block's lines are held), so the
    /// writes come in bursts (seed 004, 3.2.1 on FFT's write latency).
    fn transpose(&self, ctx: &mut Ctx, src: &Matrix, dst: &Matrix, first: usize, last: usize) {
        let p = ctx.nthreads();
        let me = ctx.tid();
        within(ctx, self.pr().transpose, |ctx| {
            // fft.C: `numblks = ceil(2 blksize / num_cache_lines)`, `blksize /= numblks`.
            let rows = last - first;
            let numblks = (2 * rows).div_ceil(NUM_CACHE_LINES).max(1);
            let blk = rows / numblks;
            for k in 1..=p {
                let owner = (me + k) % p;
                let mut v_off = owner * self.rows_per;
                for _ in 0..numblks {
                    let mut h_off = first;
                    for _ in 0..numblks {
                        for v in v_off..v_off + blk {
                            // `h` innermost: a row of the source read, a column of the
                            // destination written (`dest[h][v] = src[v][h]`).
                            for h in h_off..h_off + blk {
                                let val = src.load(ctx, src.idx(v, h));
                                dst.store(ctx, dst.idx(h, v), val);
                                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                                ctx.branch(true);
                            }
                        }
                        h_off += blk;
                    }
                    v_off += blk;
                }
            }
        });
    }

    /// SPLASH's `Reverse`: the bit-reversal permutation of one row. As in `fft.C`, the
    /// reversed index of every element comes from a call of `BitReverse(M, k)`, a procedure
    /// of its own: √n calls per row, the densest procedure calls of the program (under
    /// FlashPoint's FP-Proc each call and return is a procedure-delta command with its fence,
    /// seed 004, 3.1.3 and 3.2.4).
    fn reverse(&self, ctx: &mut Ctx, a: &Matrix, row: usize) {
        let bits = self.m / 2;
        within(ctx, self.pr().reverse, |ctx| {
            for k in 0..self.n1 {
                let j = within(ctx, self.pr().bit_reverse, |ctx| {
                    let b = bits as u64;
                    // The call and the return (two jumps), then per bit: a shift, a mask,
                    // an add (`j = 2*j + (tmp&1); tmp >>= 1`).
                    ctx.branch(true);
                    ctx.ops(&[(Op::IntShift, b), (Op::IntLogical, b), (Op::IntAdd, b)]);
                    ctx.branch(true);
                    k.reverse_bits() >> (usize::BITS - bits)
                });
                ctx.branch(j > k);
                if j > k {
                    let (ik, ij) = (a.idx(row, k), a.idx(row, j));
                    let vk = a.load(ctx, ik);
                    let vj = a.load(ctx, ij);
                    a.store(ctx, ik, vj);
                    a.store(ctx, ij, vk);
                }
            }
        });
    }

    /// SPLASH's `FFT1DOnce`: an in-place radix-2 FFT of one row with the roots in `upriv`.
    fn fft_once(&self, ctx: &mut Ctx, dir: f64, a: &Matrix, row: usize) {
        let me = ctx.tid();
        within(ctx, self.pr().once, |ctx| {
            self.reverse(ctx, a, row);
            let mut l = 2;
            while l <= self.n1 {
                let half = l / 2;
                for k in (0..self.n1).step_by(l) {
                    for j in 0..half {
                        let (wr, wi) = self.upriv.load(ctx, self.upriv.idx(me, half - 1 + j));
                        let wi = dir * wi;
                        let (i1, i2) = (a.idx(row, k + j), a.idx(row, k + j + half));
                        let (xr, xi) = a.load(ctx, i2);
                        let tr = wr * xr - wi * xi;
                        let ti = wr * xi + wi * xr;
                        let (yr, yi) = a.load(ctx, i1);
                        a.store(ctx, i2, (yr - tr, yi - ti));
                        a.store(ctx, i1, (yr + tr, yi + ti));
                        // dir * wi, four products, then tr, ti and the four sums (unfused).
                        ctx.ops(&[(Op::FpMul, 5), (Op::FpAdd, 6)]);
                        ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                        ctx.branch(true);
                    }
                }
                l *= 2;
            }
        });
    }

    /// SPLASH's `TwiddleOneCol`: multiplies row `row` by the twiddles ω_n^(row·i) of `umain2`.
    fn twiddle(&self, ctx: &mut Ctx, dir: f64, a: &Matrix, row: usize) {
        within(ctx, self.pr().twiddle, |ctx| {
            for i in 0..self.n1 {
                let (wr, wi) = self.umain2.load(ctx, self.umain2.idx(row, i));
                let wi = dir * wi;
                let ia = a.idx(row, i);
                let (xr, xi) = a.load(ctx, ia);
                a.store(ctx, ia, (wr * xr - wi * xi, wr * xi + wi * xr));
                // dir * wi, four products, two sums (unfused).
                ctx.ops(&[(Op::FpMul, 5), (Op::FpAdd, 2)]);
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                ctx.branch(true);
            }
        });
    }

    /// SPLASH's `Scale`: divides one row by n (inverse transform).
    fn scale(&self, ctx: &mut Ctx, a: &Matrix, row: usize) {
        let f = 1.0 / self.n as f64;
        within(ctx, self.pr().scale, |ctx| {
            for i in 0..self.n1 {
                let ia = a.idx(row, i);
                let (xr, xi) = a.load(ctx, ia);
                a.store(ctx, ia, (xr * f, xi * f));
                ctx.op(Op::FpMul, 2);
                ctx.int(1);
                ctx.branch(true);
            }
        });
    }

    /// SPLASH's `CopyColumn`: copies one row of `trans` back into `x`.
    fn copy_row(&self, ctx: &mut Ctx, row: usize) {
        within(ctx, self.pr().copy, |ctx| {
            for i in 0..self.n1 {
                let v = self.trans.load(ctx, self.trans.idx(row, i));
                self.x.store(ctx, self.x.idx(row, i), v);
                ctx.int(1);
                ctx.branch(true);
            }
        });
    }

    /// SPLASH's `FFT1D`: the six-step transform in direction `dir` (+1 forward, -1 inverse).
    fn fft1d(&self, ctx: &mut Ctx, dir: f64, first: usize, last: usize) {
        within(ctx, self.pr().fft1d, |ctx| {
            phase(ctx, PHASE_TRANSPOSE);
            self.barrier(ctx);
            self.transpose(ctx, &self.x, &self.trans, first, last);
            phase(ctx, PHASE_ROW_FFTS);
            for r in first..last {
                self.fft_once(ctx, dir, &self.trans, r);
                self.twiddle(ctx, dir, &self.trans, r);
            }
            phase(ctx, PHASE_TRANSPOSE);
            self.barrier(ctx);
            self.transpose(ctx, &self.trans, &self.x, first, last);
            phase(ctx, PHASE_ROW_FFTS);
            for r in first..last {
                self.fft_once(ctx, dir, &self.x, r);
                if dir < 0.0 {
                    self.scale(ctx, &self.x, r);
                }
            }
            phase(ctx, PHASE_TRANSPOSE);
            self.barrier(ctx);
            self.transpose(ctx, &self.x, &self.trans, first, last);
            phase(ctx, PHASE_COPY);
            self.barrier(ctx);
            for r in first..last {
                self.copy_row(ctx, r);
            }
            self.barrier(ctx);
        });
    }
}

/// PhaseID values (KERNELS.md, "Phases"): the touch of the arrays, the three transposes of
/// each six-step FFT (barrier waits before them included), the 1-D FFTs of the rows with their
/// twiddle and scale, and the final copy back.
pub const PHASE_INIT: u16 = 1;
pub const PHASE_TRANSPOSE: u16 = 2;
pub const PHASE_ROW_FFTS: u16 = 3;
pub const PHASE_COPY: u16 = 4;

/// A host reference FFT (recursive radix-2, independent of the simulated code path).
pub fn reference_fft(input: &[f64]) -> Vec<f64> {
    let n = input.len() / 2;
    if n == 1 {
        return input.to_vec();
    }
    let even: Vec<f64> = (0..n / 2)
        .flat_map(|k| [input[4 * k], input[4 * k + 1]])
        .collect();
    let odd: Vec<f64> = (0..n / 2)
        .flat_map(|k| [input[4 * k + 2], input[4 * k + 3]])
        .collect();
    let (e, o) = (reference_fft(&even), reference_fft(&odd));
    let mut out = vec![0.0; 2 * n];
    for k in 0..n / 2 {
        let a = -2.0 * PI * k as f64 / n as f64;
        let (wr, wi) = (a.cos(), a.sin());
        let (or, oi) = (o[2 * k], o[2 * k + 1]);
        let (tr, ti) = (wr * or - wi * oi, wr * oi + wi * or);
        out[2 * k] = e[2 * k] + tr;
        out[2 * k + 1] = e[2 * k + 1] + ti;
        out[2 * (k + n / 2)] = e[2 * k] - tr;
        out[2 * (k + n / 2) + 1] = e[2 * k + 1] - ti;
    }
    out
}

/// The direct O(n²) DFT.
fn direct_dft(input: &[f64]) -> Vec<f64> {
    let n = input.len() / 2;
    let mut out = vec![0.0; 2 * n];
    for k in 0..n {
        let (mut sr, mut si) = (0.0, 0.0);
        for j in 0..n {
            let a = -2.0 * PI * ((j * k) % n) as f64 / n as f64;
            let (c, s) = (a.cos(), a.sin());
            sr += input[2 * j] * c - input[2 * j + 1] * s;
            si += input[2 * j] * s + input[2 * j + 1] * c;
        }
        out[2 * k] = sr;
        out[2 * k + 1] = si;
    }
    out
}

impl Workload for Fft {
    fn check(&self, p: usize) -> Result<(), String> {
        if self.m % 2 != 0 {
            return Err(format!(
                "FFT: 2^{} points: the exponent must be even (√n x √n matrix)",
                self.m
            ));
        }
        if !is_pow2(p) || p > self.n1 {
            return Err(format!(
                "FFT: --threads {p}: the count must be a power of two dividing √n = {} (each thread owns √n/P rows)",
                self.n1
            ));
        }
        Ok(())
    }

    fn setup(&mut self, s: &mut Setup, p: usize) {
        let (n, n1) = (self.n, self.n1);
        self.rows_per = n1 / p;
        let stride = n1 + PAD;
        let bytes = (2 * n1 * stride * 8) as u64;
        self.x = Matrix::new(n1, stride);
        self.trans = Matrix::new(n1, stride);
        self.umain2 = Matrix::new(n1, stride);
        self.umain = Matrix::new(1, n1);
        self.upriv = Matrix::new(p, n1);
        self.x.at = doubles(s.alloc("x", bytes, Place::FirstTouch));
        self.trans.at = doubles(s.alloc("trans", bytes, Place::FirstTouch));
        self.umain2.at = doubles(s.alloc("umain2", bytes, Place::FirstTouch));
        self.umain.at = doubles(s.alloc("umain", (2 * n1 * 8) as u64, Place::Node(0)));
        self.upriv.at = doubles(s.alloc("upriv", (2 * n1 * 8 * p) as u64, Place::FirstTouch));

        // InitX: random complex input (seeded), natural order row by row.
        let mut rng = SimRng::new(0x5eed_0ff7 ^ n as u64);
        self.input = (0..2 * n).map(|_| uniform(&mut rng) - 0.5).collect();
        for r in 0..n1 {
            for c in 0..n1 {
                let i = self.x.idx(r, c);
                self.x.v.set(i, self.input[2 * (r * n1 + c)]);
                self.x.v.set(i + 1, self.input[2 * (r * n1 + c) + 1]);
            }
        }
        // InitU: roots for the stage with half-length h at [h-1, 2h-1): e^(-2πi j / 2h).
        let mut h = 1;
        while h < n1 {
            for j in 0..h {
                let a = PI * j as f64 / h as f64;
                let i = self.umain.idx(0, h - 1 + j);
                self.umain.v.set(i, a.cos());
                self.umain.v.set(i + 1, -a.sin());
            }
            h *= 2;
        }
        // InitU2: twiddles e^(-2πi r c / n).
        for r in 0..n1 {
            for c in 0..n1 {
                let a = 2.0 * PI * ((r * c) % n) as f64 / n as f64;
                let i = self.umain2.idx(r, c);
                self.umain2.v.set(i, a.cos());
                self.umain2.v.set(i + 1, -a.sin());
            }
        }
        self.bar = Some(s.barrier("fft.barrier", p));
        self.procs = Some(Procs {
            fft1d: s.procedure("FFT1D"),
            transpose: s.procedure("Transpose"),
            once: s.procedure("FFT1DOnce"),
            reverse: s.procedure("Reverse"),
            bit_reverse: s.procedure("BitReverse"),
            twiddle: s.procedure("TwiddleOneCol"),
            scale: s.procedure("Scale"),
            copy: s.procedure("CopyColumn"),
            touch: s.procedure("TouchArray"),
        });
    }

    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        let (first, last) = (me * self.rows_per, (me + 1) * self.rows_per);
        phase(ctx, PHASE_INIT);
        self.touch_array(ctx, first, last);
        self.barrier(ctx);
        self.fft1d(ctx, 1.0, first, last);
        if me == 0 {
            // Host-only snapshot; every thread is past the last barrier of the forward FFT1D
            // and none writes `x` before the first transpose of the inverse, after a barrier.
            *self.forward.borrow_mut() = self.result();
        }
        self.fft1d(ctx, -1.0, first, last);
    }

    fn verify(&self) -> Verification {
        let fwd = self.forward.borrow();
        let round = max_rel_diff(&self.result(), &self.input);
        let reference = reference_fft(&self.input);
        let vs_ref = max_rel_diff(&fwd, &reference);
        let mut detail = format!(
            "{} points: round trip max rel. error {round:.2e}; forward vs host FFT {vs_ref:.2e}",
            self.n
        );
        let mut ok = round < 1e-9 && vs_ref < 1e-9;
        if self.n <= 4096 {
            let vs_dft = max_rel_diff(&fwd, &direct_dft(&self.input));
            detail += &format!("; vs direct DFT {vs_dft:.2e}");
            ok &= vs_dft < 1e-9;
        }
        Verification::check(ok, detail)
    }
}
