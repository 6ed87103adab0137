//! The LRU caches one thread's accesses go through: [`Stack`], every fully associative level
//! of one line size at once; [`Sets`], one set-associative level. Both keep a recent prefix
//! for the counting of rows (`count::Class::row`): lines at the front in any order among
//! themselves, all more recent than the rest, which stays in exact recency order.

pub(crate) const NONE: u32 = u32::MAX;
/// The zone of a line that is in no level.
const ABSENT: u8 = u8::MAX;
/// [`Node::flags`]: the line was accessed; it is in the recent prefix.
const SEEN: u8 = 1;
const RECENT: u8 = 2;

/// One line: its place in the recency list, and what the counting keeps of it (in one place,
/// since the counting is bound by fetching them).
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Toward older and toward newer lines.
    next: u32,
    prev: u32,
    zone: u8,
    flags: u8,
    /// How many accesses of the row being counted are in the line.
    holders: u16,
}

/// The fully associative LRU caches of every level of one line size at once: one recency list
/// over dense line numbers, most recent first, cut into zones by the levels' capacities (zone
/// `z` holds the lines a cache of `capacities[z]` lines holds and one of `capacities[z - 1]`
/// does not). All levels see the same accesses, so an LRU cache of `C` lines holds exactly the
/// `C` most recent lines of the one list: a line in zone `z` hits in level `z` and every larger
/// one. Lines beyond the largest capacity leave the list.
pub struct Stack {
    /// Per zone: the lines it holds at most (`capacities[z] - capacities[z - 1]`), how many it
    /// holds, and its last (least recent) line.
    room: Vec<u64>,
    size: Vec<u64>,
    last: Vec<u32>,
    head: u32,
    nodes: Vec<Node>,
    /// How many lines at the front form the recent prefix (see `count::Class::row`), and the
    /// last of them.
    prefix: u64,
    boundary: u32,
}

impl Stack {
    /// `capacities` in lines, ascending; `lines` dense line numbers.
    pub fn new(capacities: &[u64], lines: usize) -> Stack {
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
            nodes: vec![
                Node {
                    next: NONE,
                    prev: NONE,
                    zone: ABSENT,
                    flags: 0,
                    holders: 0,
                };
                lines
            ],
            prefix: 0,
            boundary: NONE,
        }
    }

    fn unlink(&mut self, x: u32) {
        let Node { next, prev, .. } = self.nodes[x as usize];
        if prev == NONE {
            self.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next != NONE {
            self.nodes[next as usize].prev = prev;
        }
    }

    /// Accesses line `x`: the zone it was in (the number of levels when in none).
    pub fn touch(&mut self, x: u32) -> usize {
        let zones = self.room.len();
        let was = self.nodes[x as usize].zone;
        let found = if was == ABSENT { zones } else { was as usize };
        if found == 0 && self.head == x {
            return 0;
        }
        if found < zones {
            if self.last[found] == x {
                let prev = self.nodes[x as usize].prev;
                self.last[found] = if self.size[found] > 1 { prev } else { NONE };
            }
            self.size[found] -= 1;
            self.unlink(x);
        }
        // To the front, in zone 0.
        self.nodes[x as usize].next = self.head;
        self.nodes[x as usize].prev = NONE;
        if self.head != NONE {
            self.nodes[self.head as usize].prev = x;
        }
        self.head = x;
        self.nodes[x as usize].zone = 0;
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
                self.nodes[y as usize].prev
            } else {
                NONE
            };
            if z + 1 < zones {
                self.nodes[y as usize].zone = (z + 1) as u8;
                self.size[z + 1] += 1;
                if self.last[z + 1] == NONE {
                    self.last[z + 1] = y;
                }
            } else {
                self.nodes[y as usize].zone = ABSENT;
                self.unlink(y);
            }
        }
        found
    }

    /// Whether line `x` was accessed.
    pub fn seen(&self, x: u32) -> bool {
        self.nodes[x as usize].flags & SEEN != 0
    }

    /// The lines of the list, most recent first.
    pub fn lines(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.head != NONE).then_some(self.head), |&x| {
            let next = self.nodes[x as usize].next;
            (next != NONE).then_some(next)
        })
    }

    /// Whether this is line `x`'s first access; it is marked accessed.
    pub fn first_access(&mut self, x: u32) -> bool {
        let flags = &mut self.nodes[x as usize].flags;
        let first = *flags & SEEN == 0;
        *flags |= SEEN;
        first
    }

    pub fn is_recent(&self, x: u32) -> bool {
        self.nodes[x as usize].flags & RECENT != 0
    }

    pub fn set_recent(&mut self, x: u32, on: bool) {
        let flags = &mut self.nodes[x as usize].flags;
        *flags = if on {
            *flags | RECENT
        } else {
            *flags & !RECENT
        };
    }

    /// How many accesses of the row being counted are in line `x`.
    pub fn holders(&mut self, x: u32) -> &mut u16 {
        &mut self.nodes[x as usize].holders
    }

    /// Whether no line is marked recent or held.
    #[cfg(test)]
    pub fn marks_clear(&self) -> bool {
        self.nodes
            .iter()
            .all(|n| n.flags & RECENT == 0 && n.holders == 0)
    }

    /// Whether one more line can join the prefix and the prefix still hit in every level.
    pub fn has_room(&self) -> bool {
        self.prefix < self.room[0]
    }

    /// Line `x`, outside the prefix, is accessed and joins it: the zone it was found in.
    pub fn enter(&mut self, x: u32) -> usize {
        let found = self.touch(x);
        if self.prefix == 0 {
            self.boundary = x;
        }
        self.prefix += 1;
        found
    }

    /// Line `x` of the prefix leaves it: it becomes the most recent line behind the prefix.
    pub fn leave(&mut self, x: u32) {
        let b = self.boundary;
        self.prefix -= 1;
        if x == b {
            self.boundary = if self.prefix == 0 {
                NONE
            } else {
                self.nodes[x as usize].prev
            };
            return;
        }
        self.unlink(x);
        let next = self.nodes[b as usize].next;
        self.nodes[x as usize].next = next;
        self.nodes[x as usize].prev = b;
        self.nodes[b as usize].next = x;
        if next != NONE {
            self.nodes[next as usize].prev = x;
        }
        if self.last[0] == b {
            self.last[0] = x;
        }
    }

    /// How many lines at the front form the recent prefix.
    pub fn prefix_len(&self) -> u64 {
        self.prefix
    }

    /// The prefix ends; its lines were touched in the order of their last accesses.
    pub fn end_prefix(&mut self) {
        self.prefix = 0;
        self.boundary = NONE;
    }
}

/// A set-associative LRU cache: per set its ways' lines, most recent first. Lines are dense
/// line numbers (`u32`, as the stack's); the set is that of the absolute line `first + line`.
///
/// Until a set is asked to hold more lines than its ways, nothing has been evicted: the cache
/// holds every line seen, whatever their order, and every access after a line's first hits.
/// Until then only each set's number of lines is kept ([`Sets::admits`], [`Sets::admit`]);
/// the ways are filled from the recency order when the first line would not fit
/// ([`Sets::fill`]).
pub struct Sets {
    sets: u64,
    /// How the set of a line is found.
    index: SetIndex,
    ways: usize,
    /// Empty while nothing was evicted.
    tags: Vec<u32>,
    /// Per set, how many of its first ways hold lines of the recent prefix.
    prefix: Vec<u32>,
    held: Held,
}

/// A set-associative level's lines per set while nothing was evicted and a set may yet
/// receive more lines than its ways (it is lazy); nothing otherwise.
pub(crate) struct Held {
    per_set: Vec<u32>,
    ways: u32,
}

impl Held {
    /// For `sets` sets of `ways` lines and `lines` consecutive lines: lazy unless no set can
    /// receive more lines than its ways (at most `ceil(lines / sets)` map to one).
    pub(crate) fn new(sets: u64, ways: u64, lines: u64) -> Held {
        let bounded = lines.div_ceil(sets) <= ways;
        Held {
            per_set: vec![0; if bounded { 0 } else { sets as usize }],
            ways: ways as u32,
        }
    }

    pub(crate) fn lazy(&self) -> bool {
        !self.per_set.is_empty()
    }

    /// Whether a line new to set `set` leaves every line seen held.
    pub(crate) fn admits(&self, set: usize) -> bool {
        self.per_set.is_empty() || self.per_set[set] < self.ways
    }

    /// A line new to set `set` is held.
    pub(crate) fn admit(&mut self, set: usize) {
        if let Some(n) = self.per_set.get_mut(set) {
            *n += 1;
        }
    }

    /// No longer lazy: the per-set counts, zeroed, for the caller's use.
    pub(crate) fn end(&mut self) -> Vec<u32> {
        let mut per_set = std::mem::take(&mut self.per_set);
        per_set.iter_mut().for_each(|h| *h = 0);
        per_set
    }
}

/// The set of absolute line `first + x` of a cache of `sets` sets, for dense lines `x`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SetIndex {
    /// `sets` is a power of two: `(first + x) & (sets - 1)`.
    Mask { first: u64, mask: u64 },
    /// `sets` and every `first mod sets + x` are below `2^32`: `(first mod sets + x) mod sets`
    /// by multiplying with the reciprocal `2^64 / sets` rounded up (Lemire, Kaser and Kurz,
    /// "Faster remainder by direct computation", 2019).
    Reciprocal {
        first_mod: u64,
        reciprocal: u64,
        sets: u64,
    },
    /// Otherwise: `(first + x) mod sets`.
    Divide { first: u64, sets: u64 },
}

impl SetIndex {
    pub(crate) fn new(sets: u64, first: u64, lines: u64) -> SetIndex {
        if sets.is_power_of_two() {
            SetIndex::Mask {
                first,
                mask: sets - 1,
            }
        } else if sets < 1 << 31 && lines < 1 << 31 {
            SetIndex::Reciprocal {
                first_mod: first % sets,
                reciprocal: (u64::MAX / sets).wrapping_add(1),
                sets,
            }
        } else {
            SetIndex::Divide { first, sets }
        }
    }

    /// The set of dense line `x`.
    #[inline]
    pub(crate) fn set(self, x: u32) -> usize {
        (match self {
            SetIndex::Mask { first, mask } => (first + u64::from(x)) & mask,
            SetIndex::Reciprocal {
                first_mod,
                reciprocal,
                sets,
            } => {
                let low = reciprocal.wrapping_mul(first_mod + u64::from(x));
                ((u128::from(low) * u128::from(sets)) >> 64) as u64
            }
            SetIndex::Divide { first, sets } => (first + u64::from(x)) % sets,
        }) as usize
    }
}

impl Sets {
    /// A cache of `sets` sets of `ways` lines for the `lines` consecutive lines from absolute
    /// line `first`, empty. When no set can receive more lines than its ways (at most
    /// `ceil(lines / sets)` map to one), nothing is ever evicted and nothing is kept.
    pub fn new(sets: u64, ways: u64, first: u64, lines: u64) -> Sets {
        Sets {
            sets,
            index: SetIndex::new(sets, first, lines),
            ways: ways as usize,
            tags: Vec::new(),
            prefix: Vec::new(),
            held: Held::new(sets, ways, lines),
        }
    }

    /// Whether the first access of line `x` leaves every line seen held: true once the ways
    /// are kept, since then the caller's [`Sets::touch`] evicts as it must.
    pub fn admits(&self, x: u32) -> bool {
        self.held.admits(self.set_of(x))
    }

    /// Whether it keeps no ways yet and may have to.
    pub fn lazy(&self) -> bool {
        self.held.lazy()
    }

    /// Line `x` is accessed for the first time (and [`Sets::admits`] it).
    pub fn admit(&mut self, x: u32) {
        if self.held.lazy() {
            let set = self.set_of(x);
            self.held.admit(set);
        }
    }

    /// Keeps the ways from now on: `seen`, every line seen, most recent first, of which the
    /// first `prefix` form the recent prefix (in any order among themselves). Exact because
    /// nothing was evicted: each set holds its lines of `seen`, in that order.
    pub fn fill(&mut self, seen: impl Iterator<Item = u32>, prefix: u64) {
        if !self.held.lazy() {
            return;
        }
        let mut held = self.held.end();
        self.tags = vec![NONE; self.sets as usize * self.ways];
        self.prefix = vec![0; self.sets as usize];
        for (n, y) in seen.enumerate() {
            let set = self.set_of(y);
            let at = held[set] as usize;
            assert!(at < self.ways, "a set filled past its ways");
            self.tags[set * self.ways + at] = y;
            held[set] += 1;
            if (n as u64) < prefix {
                self.prefix[set] += 1;
            }
        }
    }

    fn set_of(&self, x: u32) -> usize {
        self.index.set(x)
    }

    /// Whether line `x` can join the prefix with its set's prefix lines all kept.
    pub fn has_room(&self, x: u32) -> bool {
        self.tags.is_empty() || (self.prefix[self.set_of(x)] as usize) < self.ways
    }

    /// Line `x`, outside the prefix, is accessed and joins it: as [`Sets::touch`].
    pub fn enter(&mut self, x: u32) -> (bool, u32) {
        let touched = self.touch(x);
        if !self.tags.is_empty() {
            let set = self.set_of(x);
            self.prefix[set] += 1;
        }
        touched
    }

    /// Whether line `x` is held (once seen, every line is while nothing was evicted).
    pub fn holds(&self, x: u32) -> bool {
        self.tags.is_empty() || {
            let set = self.set_of(x);
            position(&self.tags[set * self.ways..(set + 1) * self.ways], x).is_some()
        }
    }

    /// Line `x` of the prefix leaves it: it becomes its set's most recent line behind the
    /// prefix.
    pub fn leave(&mut self, x: u32) {
        if self.tags.is_empty() {
            return;
        }
        let set = self.set_of(x);
        let kept = self.prefix[set] as usize;
        let ways = &mut self.tags[set * self.ways..set * self.ways + kept];
        let at = ways
            .iter()
            .position(|&t| t == x)
            .expect("a prefix line is among its set's first ways");
        for k in at..kept - 1 {
            ways[k] = ways[k + 1];
        }
        ways[kept - 1] = x;
        self.prefix[set] -= 1;
    }

    /// The prefix ends; line `x`, one of its lines, is touched in the order of last accesses.
    pub fn settle(&mut self, x: u32) {
        if !self.tags.is_empty() {
            self.touch(x);
            let set = self.set_of(x);
            self.prefix[set] = 0;
        }
    }

    /// Accesses line `x`: whether it hit (a first access is counted by the caller whatever
    /// this says), and the line it evicted (`NONE` if none).
    pub fn touch(&mut self, x: u32) -> (bool, u32) {
        if self.tags.is_empty() {
            return (true, NONE);
        }
        let set = self.set_of(x);
        let ways = &mut self.tags[set * self.ways..(set + 1) * self.ways];
        if ways[0] == x {
            return (true, NONE);
        }
        // To the front; on a miss the last way's line is evicted.
        let at = position(ways, x);
        let end = at.unwrap_or(ways.len() - 1);
        let evicted = if at.is_some() { NONE } else { ways[end] };
        ways.copy_within(0..end, 1);
        ways[0] = x;
        (at.is_some(), evicted)
    }
}

/// The way of `ways` that holds line `x` (a line is in at most one). Every way is compared,
/// without an early exit: the compares need no branch, which the search's mispredictions
/// cost more than the ways after a hit.
#[inline(always)]
pub(crate) fn position(ways: &[u32], x: u32) -> Option<usize> {
    let at = ways
        .iter()
        .enumerate()
        .fold(usize::MAX, |at, (k, &t)| if t == x { k } else { at });
    (at != usize::MAX).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The reciprocal's sets equal the remainder's, at the ends of its range too.
    #[test]
    fn every_set_index_is_the_remainder() {
        let mut state = 99u64;
        for sets in [3u64, 5, 12, 640, 122_880, 212_992, (1 << 31) - 1] {
            for first in [0u64, 1, sets - 1, 1 << 40, (1 << 41) + 12345] {
                let lines = (1u64 << 31) - 1;
                let index = SetIndex::new(sets, first, lines);
                assert!(matches!(index, SetIndex::Reciprocal { .. }));
                let check = |x: u32| {
                    let want = ((first + u64::from(x)) % sets) as usize;
                    assert_eq!(index.set(x), want, "{sets} sets, {first}, {x}");
                };
                check(0);
                check(lines as u32);
                for _ in 0..2000 {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    check(((state >> 33) % lines) as u32);
                }
            }
        }
    }

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
