//! The counting: every access of a thread through each level's LRU cache, fully associative
//! and set-associative at once, with its misses split into compulsory (the line's first access
//! by the thread) and capacity (every other miss; in the set-associative cache this includes
//! conflict misses).
//!
//! A fully associative LRU cache of `C` lines misses an access exactly when `C` or more other
//! lines were accessed since its line was last (its stack distance is `C` or more): one
//! recency list per line size, cut at every level's capacity, gives HAYSTACK's counts for the
//! access stream at every level at once; the set-associative cache keeps one recency order per
//! set (`line mod sets`).

use absinthe_model::formats::limits::MAX_CACHE_LEVELS;
use serde::Serialize;

use crate::levels::ThreadLevel;
use crate::walk::{RowAccess, Sink};

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
/// The zone of a line that is in no level.
const ABSENT: u8 = u8::MAX;

/// The fully associative LRU caches of every level of one line size at once: one recency list
/// over dense line numbers, most recent first, cut into zones by the levels' capacities (zone
/// `z` holds the lines a cache of `capacities[z]` lines holds and one of `capacities[z - 1]`
/// does not). All levels see the same accesses, so an LRU cache of `C` lines holds exactly the
/// `C` most recent lines of the one list: a line in zone `z` hits in level `z` and every larger
/// one. Lines beyond the largest capacity leave the list.
struct Stack {
    /// Per zone: the lines it holds at most (`capacities[z] - capacities[z - 1]`), how many it
    /// holds, and its last (least recent) line.
    room: Vec<u64>,
    size: Vec<u64>,
    last: Vec<u32>,
    head: u32,
    /// Per line: `[next, previous]` (toward older, toward newer).
    links: Vec<[u32; 2]>,
    zone: Vec<u8>,
}

impl Stack {
    /// `capacities` in lines, ascending; `lines` dense line numbers.
    fn new(capacities: &[u64], lines: usize) -> Stack {
        let room = capacities
            .iter()
            .enumerate()
            .map(|(z, &c)| c - if z == 0 { 0 } else { capacities[z - 1] })
            .collect();
        Stack {
            room,
            size: vec![0; capacities.len()],
            last: vec![NONE; capacities.len()],
            head: NONE,
            links: vec![[NONE; 2]; lines],
            zone: vec![ABSENT; lines],
        }
    }

    fn unlink(&mut self, x: u32) {
        let [next, prev] = self.links[x as usize];
        if prev == NONE {
            self.head = next;
        } else {
            self.links[prev as usize][0] = next;
        }
        if next != NONE {
            self.links[next as usize][1] = prev;
        }
    }

    /// Accesses line `x`: the zone it was in (the number of levels when in none).
    fn touch(&mut self, x: u32) -> usize {
        let zones = self.room.len();
        let was = self.zone[x as usize];
        let found = if was == ABSENT { zones } else { was as usize };
        if found == 0 && self.head == x {
            return 0;
        }
        if found < zones {
            if self.last[found] == x {
                let prev = self.links[x as usize][1];
                self.last[found] = if self.size[found] > 1 { prev } else { NONE };
            }
            self.size[found] -= 1;
            self.unlink(x);
        }
        // To the front, in zone 0.
        self.links[x as usize] = [self.head, NONE];
        if self.head != NONE {
            self.links[self.head as usize][1] = x;
        }
        self.head = x;
        self.zone[x as usize] = 0;
        self.size[0] += 1;
        if self.last[0] == NONE {
            self.last[0] = x;
        }
        // Each overfull zone hands its least recent line to the next one.
        for z in 0..zones {
            if self.size[z] <= self.room[z] {
                break;
            }
            let y = self.last[z];
            self.size[z] -= 1;
            self.last[z] = if self.size[z] > 0 {
                self.links[y as usize][1]
            } else {
                NONE
            };
            if z + 1 < zones {
                self.zone[y as usize] = (z + 1) as u8;
                self.size[z + 1] += 1;
                if self.last[z + 1] == NONE {
                    self.last[z + 1] = y;
                }
            } else {
                self.zone[y as usize] = ABSENT;
                self.unlink(y);
            }
        }
        found
    }
}

/// A set-associative LRU cache: per set its ways' lines, most recent first.
struct Sets {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the set is then `line & mask`).
    mask: Option<u64>,
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
            mask: sets.is_power_of_two().then(|| sets - 1),
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
        let set = match self.mask {
            Some(mask) => line & mask,
            None => line % self.sets,
        } as usize;
        let ways = &mut self.tags[set * self.ways..(set + 1) * self.ways];
        if ways[0] == line {
            return true;
        }
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
    /// Index of its line size in `Counter::classes`.
    class: usize,
    /// Its zone in the class's stack: the line hits when found in this zone or a nearer one.
    zone: usize,
    sets: Sets,
}

/// The levels of one line size: the lines seen (a bitset over dense line numbers) and their
/// fully associative caches.
struct Class {
    shift: u32,
    seen: Vec<u64>,
    stack: Stack,
}

/// One thread's caches, every level, and its counts per site and level.
pub struct Counter {
    levels: Vec<LevelState>,
    classes: Vec<Class>,
    /// Address of dense line 0 (the layout's first allocation).
    base: u64,
    /// `counts[site * levels + level]`.
    pub counts: Vec<Counts>,
    /// The smallest line size, as a power of two.
    shift: u32,
}

impl Counter {
    /// Empty caches for addresses in `[base, end)` and `sites` access sites.
    pub fn new(levels: &[ThreadLevel], base: u64, end: u64, sites: usize) -> Counter {
        let lines_of = |shift: u32| ((end - base) >> shift) as usize + 1;
        let mut shifts: Vec<u32> = levels.iter().map(|l| l.line.trailing_zeros()).collect();
        shifts.sort_unstable();
        shifts.dedup();
        let classes = shifts
            .iter()
            .map(|&shift| {
                let mut capacities: Vec<u64> = levels
                    .iter()
                    .filter(|l| l.line.trailing_zeros() == shift)
                    .map(ThreadLevel::lines)
                    .collect();
                capacities.sort_unstable();
                Class {
                    shift,
                    seen: vec![0; lines_of(shift).div_ceil(64)],
                    stack: Stack::new(&capacities, lines_of(shift)),
                }
            })
            .collect::<Vec<_>>();
        let states = levels
            .iter()
            .map(|l| {
                let shift = l.line.trailing_zeros();
                let class = shifts.iter().position(|&s| s == shift).unwrap_or(0);
                // Its rank among its class's capacities (equal ones: the first zone of that
                // capacity; the zones between equal capacities hold nothing).
                let zone = levels
                    .iter()
                    .filter(|o| o.line == l.line && o.lines() < l.lines())
                    .count();
                LevelState {
                    shift,
                    class,
                    zone,
                    sets: Sets::new(l.sets, l.ways, lines_of(shift) as u64),
                }
            })
            .collect();
        Counter {
            levels: states,
            shift: shifts.first().copied().unwrap_or(6),
            classes,
            base,
            counts: vec![Counts::default(); sites * levels.len()],
        }
    }
}

impl Sink for Counter {
    #[inline]
    fn access(&mut self, address: u64, site: u32) -> bool {
        let offset = address - self.base;
        let n = self.levels.len();
        // Per line size (at most one per level, `limits::MAX_CACHE_LEVELS`): whether this is
        // the line's first access, and the zone it was found in.
        let mut first = [false; MAX_CACHE_LEVELS];
        let mut found = [0usize; MAX_CACHE_LEVELS];
        for (c, class) in self.classes.iter_mut().enumerate() {
            let line = (offset >> class.shift) as usize;
            let word = &mut class.seen[line / 64];
            let bit = 1u64 << (line % 64);
            first[c] = *word & bit == 0;
            *word |= bit;
            found[c] = class.stack.touch(line as u32);
        }
        let counts = &mut self.counts[site as usize * n..(site as usize + 1) * n];
        let mut all = true;
        for (state, c) in self.levels.iter_mut().zip(counts) {
            let hit = found[state.class] <= state.zone;
            let hit_sa = state.sets.touch(address >> state.shift);
            c.accesses += 1;
            if first[state.class] {
                c.compulsory += 1;
                c.compulsory_sa += 1;
                all = false;
            } else {
                c.capacity += u64::from(!hit);
                c.capacity_sa += u64::from(!hit_sa);
                all &= hit && hit_sa;
            }
        }
        all
    }

    fn repeat(&mut self, rows: &[RowAccess]) {
        let n = self.levels.len();
        for &RowAccess { site, .. } in rows {
            for c in &mut self.counts[site as usize * n..(site as usize + 1) * n] {
                c.accesses += 1;
            }
        }
    }

    fn line_shift(&self) -> u32 {
        self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The one stack against one plain LRU list per capacity, equal capacities included, on
    /// a random stream with runs of repeats.
    #[test]
    fn one_stack_answers_for_every_capacity() {
        let capacities = [1u64, 3, 7, 7, 50];
        let mut stack = Stack::new(&capacities, 200);
        let mut lists: Vec<VecDeque<u32>> = vec![VecDeque::new(); capacities.len()];
        let mut state = 12345u64;
        for _ in 0..20000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = ((state >> 33) % if state & 1 == 0 { 12 } else { 200 }) as u32;
            let found = stack.touch(x);
            for (z, (list, &cap)) in lists.iter_mut().zip(&capacities).enumerate() {
                let hit = match list.iter().position(|&y| y == x) {
                    Some(at) => {
                        list.remove(at);
                        true
                    }
                    None => false,
                };
                list.push_front(x);
                list.truncate(cap as usize);
                let rank = capacities.iter().filter(|&&c| c < cap).count();
                assert_eq!(found <= rank, hit, "capacity {cap} (level {z}), line {x}");
            }
        }
    }
}
