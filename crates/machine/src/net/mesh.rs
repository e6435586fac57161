//! FLASH's 2-D mesh interconnect (seed 004, 3.1.1: "nodes are interconnected via a
//! two-dimensional mesh network").
//!
//! Nodes sit on the smallest near-square grid: width `ceil(sqrt(n))`, height `ceil(n / width)`
//! (16 nodes: 4x4, 64: 8x8, 12: 4x3). Routing is dimension-order (X first, then Y), so a pair of
//! nodes always uses one path. Each directed link is a contended resource: a message of `k`
//! flits holds a link for `k * flit_cycles` from when its head gets it; the head moves on to the
//! next router `router_cycles` later (cut-through), and the message has arrived when its tail
//! leaves the last link.
//!
//! A message reserves its whole path when it is injected (the reservation is computed ahead in
//! simulated time). Links are granted first-come in injection order and a later message on the
//! same path can never overtake an earlier one, so **messages between one pair of nodes arrive
//! in the order sent** (the protocol relies on this: a write-back stays ahead of its owner's
//! later requests). Back-pressure (a blocked head holding upstream links) is not modelled.

use crate::probe::Resource;
use engine::Tick;

/// Directions of a node's outgoing links (the `Resource::MeshLink` direction numbers).
pub const EAST: u8 = 0;
pub const WEST: u8 = 1;
pub const NORTH: u8 = 2;
pub const SOUTH: u8 = 3;

pub struct Mesh {
    pub width: usize,
    pub height: usize,
    router: Tick,
    flit: Tick,
    /// When each directed link (node * 4 + direction) is next free.
    link_free: Vec<Tick>,
}

/// One link use, for `Observation::Queue`.
pub struct LinkUse {
    pub res: Resource,
    pub t: Tick,
    pub wait: Tick,
    pub busy: Tick,
}

impl Mesh {
    /// A mesh for `nodes` nodes; `router` and `flit` are per-hop and per-flit times in ticks.
    pub fn new(nodes: usize, router: Tick, flit: Tick) -> Mesh {
        let width = (1..=nodes).find(|w| w * w >= nodes).unwrap_or(1);
        let height = nodes.div_ceil(width);
        Mesh {
            width,
            height,
            router,
            flit,
            link_free: vec![0; width * height * 4],
        }
    }

    fn xy(&self, n: usize) -> (usize, usize) {
        (n % self.width, n / self.width)
    }

    /// Hops between two nodes.
    pub fn hops(&self, a: usize, b: usize) -> usize {
        let (ax, ay) = self.xy(a);
        let (bx, by) = self.xy(b);
        ax.abs_diff(bx) + ay.abs_diff(by)
    }

    /// Uncontended transit of a `flits`-flit message over `hops` hops.
    pub fn transit(&self, hops: usize, flits: u32) -> Tick {
        hops as Tick * self.router + flits as Tick * self.flit
    }

    /// Sends a `flits`-flit message from `from` to `to`, its head entering the first router at
    /// `t`. Returns when its tail arrives; `uses` receives each link use.
    pub fn send(
        &mut self,
        from: usize,
        to: usize,
        t: Tick,
        flits: u32,
        uses: &mut Vec<LinkUse>,
    ) -> Tick {
        let busy = flits as Tick * self.flit;
        let (mut x, mut y) = self.xy(from);
        let (tx, ty) = self.xy(to);
        let mut head = t;
        while (x, y) != (tx, ty) {
            let (dir, nx, ny) = if x < tx {
                (EAST, x + 1, y)
            } else if x > tx {
                (WEST, x - 1, y)
            } else if y < ty {
                (SOUTH, x, y + 1)
            } else {
                (NORTH, x, y - 1)
            };
            let node = y * self.width + x;
            let l = &mut self.link_free[node * 4 + dir as usize];
            let start = head.max(*l);
            *l = start + busy;
            uses.push(LinkUse {
                res: Resource::MeshLink(node as u16, dir),
                t: head,
                wait: start - head,
                busy,
            });
            head = start + self.router;
            (x, y) = (nx, ny);
        }
        head + busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_square_shapes() {
        for (n, w, h) in [
            (1, 1, 1),
            (4, 2, 2),
            (12, 4, 3),
            (16, 4, 4),
            (64, 8, 8),
            (65, 9, 8),
        ] {
            let m = Mesh::new(n, 1, 1);
            assert_eq!((m.width, m.height), (w, h), "{n} nodes");
        }
    }

    #[test]
    fn uncontended_time_is_hops_times_router_plus_flits() {
        let mut m = Mesh::new(16, 8, 1);
        let mut u = Vec::new();
        // Node 0 (0,0) to node 15 (3,3): 6 hops, X first.
        assert_eq!(m.hops(0, 15), 6);
        assert_eq!(m.send(0, 15, 100, 17, &mut u), 100 + 6 * 8 + 17);
        assert_eq!(u.len(), 6);
        assert!(matches!(u[0].res, Resource::MeshLink(0, EAST)));
        assert!(matches!(u[3].res, Resource::MeshLink(3, SOUTH)));
    }

    #[test]
    fn links_are_contended_and_order_is_kept() {
        let mut m = Mesh::new(16, 8, 1);
        let mut u = Vec::new();
        let a = m.send(0, 3, 0, 17, &mut u);
        let b = m.send(0, 3, 0, 1, &mut u);
        assert!(b > a, "a short message overtook a long one: {a} {b}");
        assert_eq!(u[3].wait, 17, "second message waits for the first's flits");
    }
}
