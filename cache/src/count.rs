//! The counting: every access of a thread through each level's LRU cache, fully associative
//! and set-associative at once, with its misses split into compulsory (the line's first access
//! by the thread) and capacity (every other miss; in the set-associative cache this includes
//! conflict misses).
//!
//! A fully associative LRU cache of `C` lines misses an access exactly when `C` or more other
//! lines were accessed since its line was last (its stack distance is `C` or more), so one
//! recency list per level gives HAYSTACK's counts for the access stream; the set-associative
//! cache keeps one recency order per set (`line mod sets`).

use absinthe_model::formats::limits::MAX_CACHE_LEVELS;
use serde::Serialize;

use crate::levels::ThreadLevel;
use crate::walk::Sink;

/// One access site's (or a sum's) counts at one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub accesses: u64,
    /// First accesses of a line by its thread: misses in any cache.
    pub compulsory: u64,
    /// Other misses of the fully associative cache.
    pub capacity: u64,
    /// Compulsory misses of the set-associative cache (the same first accesses).
    pub compulsory_sa: u64,
    /// Other misses of the set-associative cache: capacity and conflict misses.
    pub capacity_sa: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.accesses += o.accesses;
        self.compulsory += o.compulsory;
        self.capacity += o.capacity;
        self.compulsory_sa += o.compulsory_sa;
        self.capacity_sa += o.capacity_sa;
    }

    /// Misses of the fully associative cache.
    pub fn misses(&self) -> u64 {
        self.compulsory + self.capacity
    }

    /// Misses of the set-associative cache.
    pub fn misses_sa(&self) -> u64 {
        self.compulsory_sa + self.capacity_sa
    }
}

const NONE: u32 = u32::MAX;

/// A fully associative LRU cache of `capacity` lines over dense line numbers: a doubly linked
/// recency list, most recent first.
struct Recency {
    capacity: u64,
    len: u64,
    head: u32,
    tail: u32,
    next: Vec<u32>,
    prev: Vec<u32>,
    present: Vec<bool>,
}

impl Recency {
    fn new(capacity: u64, lines: usize) -> Recency {
        Recency {
            capacity,
            len: 0,
            head: NONE,
            tail: NONE,
            next: vec![NONE; lines],
            prev: vec![NONE; lines],
            present: vec![false; lines],
        }
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
        if p == NONE {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NONE {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn push_front(&mut self, x: u32) {
        self.prev[x as usize] = NONE;
        self.next[x as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = x;
        } else {
            self.tail = x;
        }
        self.head = x;
    }

    /// Accesses line `x`: whether it hit.
    fn touch(&mut self, x: u32) -> bool {
        if self.present[x as usize] {
            if self.head != x {
                self.unlink(x);
                self.push_front(x);
            }
            return true;
        }
        self.present[x as usize] = true;
        self.push_front(x);
        self.len += 1;
        if self.len > self.capacity {
            let last = self.tail;
            self.unlink(last);
            self.present[last as usize] = false;
            self.len -= 1;
        }
        false
    }
}

/// A set-associative LRU cache: per set its ways' lines, most recent first.
struct Sets {
    sets: u64,
    ways: usize,
    tags: Vec<u64>,
}

impl Sets {
    /// A cache of `sets` sets of `ways` lines for lines among `lines` consecutive ones. When no
    /// set can receive more lines than its ways (at most `ceil(lines / sets)` map to one),
    /// nothing is ever evicted and nothing is kept: every access after the first hits. Else
    /// `sets * ways` is below `lines + sets`.
    fn new(sets: u64, ways: u64, lines: u64) -> Sets {
        let kept = if lines.div_ceil(sets) <= ways {
            0
        } else {
            sets * ways
        };
        Sets {
            sets,
            ways: ways as usize,
            tags: vec![u64::MAX; kept as usize],
        }
    }

    /// Accesses line `line` (an absolute line number): whether it hit (a first access is
    /// counted by the caller whatever this says).
    fn touch(&mut self, line: u64) -> bool {
        if self.tags.is_empty() {
            return true;
        }
        let set = (line % self.sets) as usize;
        let ways = &mut self.tags[set * self.ways..(set + 1) * self.ways];
        match ways.iter().position(|&t| t == line) {
            Some(at) => {
                ways[..=at].rotate_right(1);
                true
            }
            None => {
                ways.rotate_right(1);
                ways[0] = line;
                false
            }
        }
    }
}

/// One level's caches for one thread.
struct LevelState {
    shift: u32,
    /// Index of its line size in `Counter::seen`.
    class: usize,
    fully: Recency,
    sets: Sets,
}

/// One thread's caches, every level, and its counts per site and level.
pub struct Counter {
    levels: Vec<LevelState>,
    /// Per line size (as a shift): the lines seen, as a bitset over dense line numbers.
    seen: Vec<(u32, Vec<u64>)>,
    /// Address of dense line 0 (the layout's first allocation).
    base: u64,
    /// `counts[site * levels + level]`.
    pub counts: Vec<Counts>,
}

impl Counter {
    /// Empty caches for addresses in `[base, end)` and `sites` access sites.
    pub fn new(levels: &[ThreadLevel], base: u64, end: u64, sites: usize) -> Counter {
        let mut seen: Vec<(u32, Vec<u64>)> = Vec::new();
        let states = levels
            .iter()
            .map(|l| {
                let shift = l.line.trailing_zeros();
                let lines = ((end - base) >> shift) as usize + 1;
                let class = match seen.iter().position(|(s, _)| *s == shift) {
                    Some(c) => c,
                    None => {
                        seen.push((shift, vec![0; lines.div_ceil(64)]));
                        seen.len() - 1
                    }
                };
                LevelState {
                    shift,
                    class,
                    fully: Recency::new(l.lines(), lines),
                    sets: Sets::new(l.sets, l.ways, lines as u64),
                }
            })
            .collect();
        Counter {
            levels: states,
            seen,
            base,
            counts: vec![Counts::default(); sites * levels.len()],
        }
    }
}

impl Sink for Counter {
    #[inline]
    fn access(&mut self, address: u64, site: u32) {
        let offset = address - self.base;
        let n = self.levels.len();
        // At most one line size per level (`limits::MAX_CACHE_LEVELS`).
        let mut first = [false; MAX_CACHE_LEVELS];
        for (c, (shift, bits)) in self.seen.iter_mut().enumerate() {
            let line = (offset >> *shift) as usize;
            let word = &mut bits[line / 64];
            let bit = 1u64 << (line % 64);
            first[c] = *word & bit == 0;
            *word |= bit;
        }
        let counts = &mut self.counts[site as usize * n..(site as usize + 1) * n];
        for (state, c) in self.levels.iter_mut().zip(counts) {
            let dense = (offset >> state.shift) as u32;
            let new = first[state.class];
            let hit = state.fully.touch(dense);
            let hit_sa = state.sets.touch(address >> state.shift);
            c.accesses += 1;
            if new {
                c.compulsory += 1;
                c.compulsory_sa += 1;
            } else {
                c.capacity += u64::from(!hit);
                c.capacity_sa += u64::from(!hit_sa);
            }
        }
    }
}
