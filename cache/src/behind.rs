//! A set-associative level counted only where a smaller one of its line size misses.
//!
//! LRU caches of one line size that see the same accesses are inclusive when the larger one's
//! sets are a multiple of the smaller one's and it has at least as many ways (Mattson et al.,
//! "Evaluation techniques for storage hierarchies", 1970): each set of the larger level, `h`,
//! draws its lines from one set of the smaller, `f`, and every line `f` holds, `h` holds.
//! In an `h` set, the recency order is then:
//! - first the lines `f` holds, in `f`'s order: they are the most recent lines of their `f`
//!   set, which contains the `h` set's lines;
//! - then the lines `f` evicted, in the order it evicted them: an `f` set evicts its least
//!   recent line, so it evicts in the order of last accesses.
//!
//! So `h` need only know how many of each set's lines `f` holds, and the lines `f` evicted, in
//! that order, as many as the set's ways leave room for ([`Behind`]). An access that
//! hits in `f` hits in `h` and changes nothing `h` keeps; only a miss in `f` is looked up.
//! The row counting's recent prefix (`count::Class::row`) lies wholly in `f`, so its
//! reordering changes nothing `h` keeps either.

use crate::lru::{position, Held, SetIndex, NONE};

/// One set-associative level behind a smaller one of its line size, `f`.
pub struct Behind {
    sets: u64,
    index: SetIndex,
    ways: usize,
    /// Per set, the lines `f` evicted that this level still holds, least recent first (so
    /// that a line joins at the end and one evicted lately, most often found again, moves
    /// few to leave), then `NONE`. Empty while nothing was evicted here.
    tags: Vec<u32>,
    /// Per set, how many of them there are, and how many lines `f` holds.
    behind: Vec<u32>,
    resident: Vec<u32>,
    held: Held,
}

/// Whether a level of `sets` sets of `ways` ways can be counted behind one of `f_sets` sets
/// of `f_ways` ways, of the same line size.
pub fn includes(sets: u64, ways: u64, f_sets: u64, f_ways: u64) -> bool {
    sets.is_multiple_of(f_sets) && ways >= f_ways
}

impl Behind {
    /// As [`crate::lru::Sets::new`]: `sets` sets of `ways` lines for the `lines` consecutive
    /// lines from absolute line `first`.
    pub fn new(sets: u64, ways: u64, first: u64, lines: u64) -> Behind {
        Behind {
            sets,
            index: SetIndex::new(sets, first, lines),
            ways: ways as usize,
            tags: Vec::new(),
            behind: Vec::new(),
            resident: Vec::new(),
            held: Held::new(sets, ways, lines),
        }
    }

    fn set_of(&self, x: u32) -> usize {
        self.index.set(x)
    }

    /// As [`crate::lru::Sets::admits`].
    pub fn admits(&self, x: u32) -> bool {
        self.held.admits(self.set_of(x))
    }

    /// As [`crate::lru::Sets::lazy`].
    pub fn lazy(&self) -> bool {
        self.held.lazy()
    }

    /// Whether it keeps its sets (some set was asked to hold more lines than its ways).
    #[cfg(test)]
    pub fn keeps(&self) -> bool {
        !self.tags.is_empty()
    }

    /// As [`crate::lru::Sets::admit`].
    pub fn admit(&mut self, x: u32) {
        if self.held.lazy() {
            let set = self.set_of(x);
            self.held.admit(set);
        }
    }

    /// Keeps its sets from now on: `seen`, every line seen, most recent first; `in_f`, whether
    /// `f` holds a line. Exact because nothing was evicted here: each set holds its lines of
    /// `seen`, those `f` holds first, the others in the order of `seen`.
    pub fn fill(&mut self, seen: impl Iterator<Item = u32>, in_f: impl Fn(u32) -> bool) {
        if !self.held.lazy() {
            return;
        }
        self.held.end();
        self.tags = vec![NONE; self.sets as usize * self.ways];
        self.behind = vec![0; self.sets as usize];
        self.resident = vec![0; self.sets as usize];
        // Oldest first, as the lines `f` evicted are kept.
        let seen: Vec<u32> = seen.collect();
        for &y in seen.iter().rev() {
            let set = self.set_of(y);
            if in_f(y) {
                self.resident[set] += 1;
            } else {
                let at = self.behind[set] as usize;
                self.tags[set * self.ways + at] = y;
                self.behind[set] += 1;
            }
            assert!(
                (self.resident[set] + self.behind[set]) as usize <= self.ways,
                "a set filled past its ways"
            );
        }
    }

    /// `f` missed line `x` (`first`: its first access) and evicted `evicted` (or `NONE`):
    /// whether `x` hit here (a first access is counted by the caller whatever this says).
    pub fn missed(&mut self, x: u32, first: bool, evicted: u32) -> bool {
        if self.tags.is_empty() {
            return !first;
        }
        let w = self.ways;
        if evicted != NONE {
            // The most recent line behind `f`'s; its set's total is unchanged.
            let set = self.set_of(evicted);
            let n = self.behind[set] as usize;
            debug_assert!(n < w, "a full set");
            self.tags[set * w + n] = evicted;
            self.behind[set] += 1;
            self.resident[set] -= 1;
        }
        let set = self.set_of(x);
        let ways = &mut self.tags[set * w..(set + 1) * w];
        let n = self.behind[set] as usize;
        let at = if first { None } else { position(ways, x) };
        let mut n = match at {
            Some(at) => {
                ways.copy_within(at + 1..n, at);
                ways[n - 1] = NONE;
                n - 1
            }
            None => n,
        };
        self.resident[set] += 1;
        if self.resident[set] as usize + n > w {
            // The set's least recent line leaves.
            ways.copy_within(1..n, 0);
            n -= 1;
            ways[n] = NONE;
        }
        self.behind[set] = n as u32;
        at.is_some()
    }
}
